//! A set of named quantities (`cpu`, `memory`, `storage`, GPU keys), with checked arithmetic.

use std::collections::BTreeMap;
use std::fmt;

use crate::quantity::{Notation, Quantity};

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const STORAGE: &str = "storage";
/// Devices over every GPU class.
pub const GPU_ALL_CLASSES: &str = "gpuclass.cozystack.io/devices";
/// Suffix of the per-class device key `<class>.gpuclass.cozystack.io/devices`.
pub const GPU_CLASS_SUFFIX: &str = ".gpuclass.cozystack.io/devices";
/// The GPU budget domain: any key under it that is not one of the two forms above is refused.
pub const GPU_DOMAIN: &str = "gpuclass.cozystack.io/";

pub fn gpu_class_key(class: &str) -> String {
    format!("{class}{GPU_CLASS_SUFFIX}")
}

/// How a key's quantities read best.
pub fn notation(key: &str) -> Notation {
    if key == CPU || key.ends_with("/devices") {
        Notation::Decimal
    } else {
        Notation::Binary
    }
}

pub fn show(key: &str, q: Quantity) -> String {
    q.to_canonical(notation(key))
}

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

    /// `self - other` per key, over the keys of both (values may be negative).
    pub fn minus(&self, other: &Resources) -> Result<Resources, Overflow> {
        let mut out = self.clone();
        for (k, q) in other.iter() {
            let current = out.get(k);
            let diff = current.checked_sub(q).ok_or(Overflow)?;
            out.0.insert(k.to_string(), diff);
        }
        out.0.retain(|_, q| !q.is_zero());
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
        let delta = r.minus(&three).unwrap();
        assert_eq!(delta.get(CPU), q("-4"));
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

    #[test]
    fn keys_print_in_their_notation() {
        assert_eq!(show(CPU, q("2048")), "2048");
        assert_eq!(show(MEMORY, q("2048")), "2Ki");
        assert_eq!(show(&gpu_class_key("a10"), q("4")), "4");
    }
}
