//! Paths into the values: where every other term reads from. A path is read from the values
//! the block applies to, from the application's top-level values (`$.`), or from the `each`
//! item enclosing this one (`^.`).

use std::fmt;

/// A dot-separated path into the values a block applies to. Inside an `each` item, `$.a.b`
/// reads `a.b` of the application's top-level values (Helm's `$.Values`) and `^.a.b` reads
/// the item that encloses this one (the top level for a first-level item).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    /// The path as written, `$.` or `^.` included.
    pub text: String,
    pub from: From,
}

/// Where a path is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum From {
    /// The values the block applies to.
    Here,
    /// The application's top-level values.
    Root,
    /// The item enclosing this one.
    Enclosing,
}

impl Path {
    pub fn parse(text: &str) -> Result<Path, String> {
        let (from, rest) = if let Some(rest) = text.strip_prefix("$.") {
            (From::Root, rest)
        } else if let Some(rest) = text.strip_prefix("^.") {
            (From::Enclosing, rest)
        } else {
            (From::Here, text)
        };
        if rest.is_empty() || rest.split('.').any(str::is_empty) {
            return Err(format!("{text:?} is not a dot-separated path"));
        }
        Ok(Path {
            text: text.to_string(),
            from,
        })
    }

    /// A path of the values the block applies to.
    pub fn here(text: &str) -> Path {
        Path {
            text: text.to_string(),
            from: From::Here,
        }
    }

    /// The path below the values it is read from (`$.` or `^.` removed).
    pub fn relative(&self) -> &str {
        match self.from {
            From::Here => &self.text,
            From::Root | From::Enclosing => &self.text[2..],
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
