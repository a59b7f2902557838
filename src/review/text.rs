//! How long texts are kept readable: a problem list shown a few at a time, each cut short,
//! so that a pool of hundreds of broken objects still gets a readable answer.

/// How many problems with other objects a message or the warnings name one by one, and how
/// long each may be.
pub(super) const PROBLEMS_SHOWN: usize = 3;
pub(super) const PROBLEM_CHARS: usize = 200;

/// `a; b; c; +N more`.
pub(super) fn summary(problems: &[String]) -> String {
    let mut shown: Vec<String> = problems
        .iter()
        .take(PROBLEMS_SHOWN)
        .map(|p| cut(p.clone(), PROBLEM_CHARS))
        .collect();
    if problems.len() > PROBLEMS_SHOWN {
        shown.push(format!("+{} more", problems.len() - PROBLEMS_SHOWN));
    }
    shown.join("; ")
}

/// `text` cut to at most `chars` characters, the last one `…` when cut.
pub(crate) fn cut(text: String, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text;
    }
    let mut cut: String = text.chars().take(chars - 1).collect();
    cut.push('…');
    cut
}
