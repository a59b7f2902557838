//! The documents' links resolve: every relative link of README.md, CHANGELOG.md and docs/*.md
//! names a file that exists and, with `#anchor`, a heading (GitHub's anchor rules) or an
//! `<a id>` of it; every `file.md#anchor` and README `#anchor` that metadata.yml (the usage
//! text ArtifactHub shows), deploy/, examples/ and src/ cite does too.

use std::collections::BTreeSet;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to
/// `-`; a repeated one gets `-1`, `-2`, ...
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

fn anchors(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut found = BTreeSet::new();
    for line in prose(&text) {
        if let Some(heading) = line.strip_prefix('#') {
            let base = slug(heading.trim_start_matches('#'));
            let mut anchor = base.clone();
            let mut n = 0;
            while found.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            found.insert(anchor);
        }
        for part in line.split("<a id=\"").skip(1) {
            found.insert(part.split('"').next().unwrap().to_string());
        }
    }
    found
}

/// `None` when `link` (relative to `dir`) resolves, else why not.
fn broken(dir: &Path, link: &str) -> Option<String> {
    let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
    let target = dir.join(file);
    if !target.exists() {
        return Some(format!("{link}: no {}", target.display()));
    }
    if !anchor.is_empty() && file.ends_with(".md") && !anchors(&target).contains(anchor) {
        return Some(format!("{link}: {file} has no heading #{anchor}"));
    }
    None
}

fn markdown_links(text: &str) -> Vec<String> {
    prose(text)
        .flat_map(|line| line.split("](").skip(1))
        .filter_map(|rest| rest.split([')', ' ']).next())
        .filter(|link| !link.contains("://") && !link.starts_with("mailto:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_relative_link_and_anchor_of_the_documents_resolves() {
    let root = Path::new(ROOT);
    let mut documents = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            documents.push(path);
        }
    }
    let mut problems = Vec::new();
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        let dir = document.parent().unwrap();
        for link in markdown_links(&text) {
            let link = if link.starts_with('#') {
                format!("{}{link}", document.file_name().unwrap().to_str().unwrap())
            } else {
                link
            };
            if let Some(why) = broken(dir, &link) {
                problems.push(format!("{}: {why}", document.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// `file.md#anchor` (from the repository's root) and the repository's URL with `#anchor`
/// (README's), as comments and the usage text cite them.
#[test]
fn every_anchor_the_manifests_and_the_source_cite_resolves() {
    let root = Path::new(ROOT);
    let mut files = vec![root.join("metadata.yml")];
    let mut dirs = vec![root.join("deploy"), root.join("examples"), root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path
                .extension()
                .is_some_and(|e| ["yml", "yaml", "rs"].contains(&e.to_str().unwrap()))
            {
                files.push(path);
            }
        }
    }
    let cited = |word: &str| -> Option<String> {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '#');
        if let Some((_, anchor)) = word.split_once("tenant-reservation-policy#") {
            return Some(format!("README.md#{anchor}"));
        }
        let (file, anchor) = word.split_once(".md#")?;
        let file = file.rsplit(['(', '`', '[']).next().unwrap();
        Some(format!("{file}.md#{anchor}"))
    };
    let mut problems = Vec::new();
    let mut seen = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for link in text.split_whitespace().filter_map(cited) {
            seen += 1;
            if let Some(why) = broken(root, &link) {
                problems.push(format!("{}: {why}", file.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(seen >= 3, "only {seen} anchors found: the search is broken");
}
