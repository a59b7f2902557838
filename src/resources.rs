//! A set of named quantities (`cpu`, `memory`, `storage`, GPU keys), with checked arithmetic.

use std::collections::BTreeMap;
use std::fmt;

use crate::keys::show;
use crate::quantity::Quantity;

/// The sum would not fit: reported as a rejection of the input that caused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow;

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the total overflows")
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources(BTreeMap<String, Quantity>);

impl Resources {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, key: &str) -> Quantity {
        self.0.get(key).copied().unwrap_or(Quantity::ZERO)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Quantity)> {
        self.0.iter().map(|(k, q)| (k.as_str(), *q))
    }

    pub fn is_empty(&self) -> bool {
        self.0.values().all(|q| q.is_zero())
    }

    /// Adds `q` to `key`; zero additions leave no entry behind.
    pub fn add(&mut self, key: &str, q: Quantity) -> Result<(), Overflow> {
        if q.is_zero() {
            return Ok(());
        }
        match self.0.get_mut(key) {
            Some(existing) => *existing = existing.checked_add(q).ok_or(Overflow)?,
            None => {
                self.0.insert(key.to_string(), q);
            }
        }
        Ok(())
    }

    pub fn add_all(&mut self, other: &Resources) -> Result<(), Overflow> {
        other.iter().try_for_each(|(k, q)| self.add(k, q))
    }

    pub fn scaled(&self, factor: u64) -> Result<Resources, Overflow> {
        let mut out = Resources::new();
        for (k, q) in self.iter() {
            out.add(k, q.checked_mul(factor).ok_or(Overflow)?)?;
        }
        Ok(out)
    }
}

impl FromIterator<(String, Quantity)> for Resources {
    fn from_iter<I: IntoIterator<Item = (String, Quantity)>>(iter: I) -> Self {
        Resources(iter.into_iter().filter(|(_, q)| !q.is_zero()).collect())
    }
}

impl fmt::Display for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return write!(f, "nothing");
        }
        let parts: Vec<String> = self
            .iter()
            .map(|(k, q)| format!("{k} {}", show(k, q)))
            .collect();
        write!(f, "{}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{CPU, MEMORY, STORAGE};

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn adds_scales_and_subtracts_exactly() {
        let mut r = Resources::new();
        r.add(CPU, q("250m")).unwrap();
        r.add(CPU, q("1.75")).unwrap();
        r.add(MEMORY, q("1Gi")).unwrap();
        r.add(STORAGE, Quantity::ZERO).unwrap();
        assert_eq!(r.get(CPU), q("2"));
        assert_eq!(r.iter().count(), 2, "a zero addition leaves no key");
        let three = r.scaled(3).unwrap();
        assert_eq!(three.get(MEMORY), q("3Gi"));
        assert_eq!(three.to_string(), "cpu 6, memory 3Gi");
        assert_eq!(Resources::new().to_string(), "nothing");
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap() {
        let mut r = Resources::new();
        r.add(CPU, Quantity::from_nanos(i128::MAX)).unwrap();
        assert_eq!(r.add(CPU, q("1n")), Err(Overflow));
        assert_eq!(r.scaled(2), Err(Overflow));
    }
}
