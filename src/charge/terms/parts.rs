//! The block's parts that are not one value: GPU lists, implied applications (tenant
//! modules a chart creates as releases of their own), the explicit size of one replica and
//! constant (`fixed`) quantities.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Amount, Condition, Path, literal_quantity, object, only};
use crate::json::describe;
use crate::keys::{CPU, MEMORY, STORAGE};
use crate::quantity::Quantity;

/// A list of GPUs to charge.
#[derive(Clone, Debug, PartialEq)]
pub enum Gpus {
    /// Entries `{class, count, name}`: `count` devices (default 1) of `class`, or of the class
    /// `gpuDeviceClasses` gives `name`.
    Entries(Path),
    /// Entries that are one device each, named by `name` and classed only through
    /// `gpuDeviceClasses` (what the VM charts render: `deviceName: <name>`, nothing else).
    Devices(Path),
}

/// An application the object's chart creates as a release of its own, in the namespace a
/// Tenant owns (a tenant module), charged at `values` (its kind's defaults) until it exists.
#[derive(Clone, Debug, PartialEq)]
pub struct Implied {
    pub kind: String,
    pub name: String,
    pub when: Vec<Condition>,
    pub values: Value,
}

/// The explicit per-key size of one replica.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Size {
    pub cpu: Option<Amount>,
    pub memory: Option<Amount>,
}

/// Constant quantities of one replica (hard-coded containers, fixed volumes).
pub type Fixed = BTreeMap<String, Quantity>;

impl Gpus {
    pub fn from_json(v: &Value) -> Result<Gpus, String> {
        match v {
            Value::String(s) => Path::parse(s).map(Gpus::Entries),
            Value::Object(map) => {
                only(map, &["devices"], "gpus")?;
                match map.get("devices") {
                    Some(Value::String(s)) => Path::parse(s).map(Gpus::Devices),
                    _ => Err("gpus: devices must be a path".into()),
                }
            }
            other => Err(format!(
                "gpus is a path or {{devices: <path>}}, not {}",
                describe(other)
            )),
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Gpus::Entries(p) | Gpus::Devices(p) => p,
        }
    }
}

impl Implied {
    pub fn from_json(v: &Value) -> Result<Implied, String> {
        const WHAT: &str = "an implied application";
        let map = object(v, WHAT)?;
        only(map, &["kind", "name", "when", "values"], WHAT)?;
        let text = |field: &str| match map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            _ => Err(format!("{WHAT}: {field} must be a non-empty string")),
        };
        let values = match map.get("values") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(other) => {
                return Err(format!(
                    "{WHAT}: values must be an object, not {}",
                    describe(other)
                ));
            }
        };
        Ok(Implied {
            kind: text("kind")?,
            name: text("name")?,
            when: match map.get("when") {
                Some(w) => Condition::all_from_json(w)?,
                None => Vec::new(),
            },
            values,
        })
    }
}

impl Size {
    pub fn from_json(v: &Value) -> Result<Size, String> {
        let map = object(v, "size")?;
        only(map, &[CPU, MEMORY], "size")?;
        let key = |k: &str| map.get(k).map(Amount::from_json).transpose();
        Ok(Size {
            cpu: key(CPU)?,
            memory: key(MEMORY)?,
        })
    }
}

pub fn fixed_from_json(v: &Value) -> Result<Fixed, String> {
    let map = object(v, "fixed")?;
    only(map, &[CPU, MEMORY, STORAGE], "fixed")?;
    map.iter()
        .map(|(k, q)| literal_quantity(q, &format!("fixed.{k}")).map(|q| (k.clone(), q)))
        .collect()
}
