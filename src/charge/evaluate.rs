//! Evaluating a reservation block against one application's values: what it reserves.
//!
//! Pure apart from the [`InstanceTypes`] lookup, so every rule is testable natively.

use std::collections::BTreeMap;

use serde_json::Value;

use super::definition::Reservation;
use super::presets::Presets;
use super::values::{Cursor, describe};
use crate::keys::{CPU, GPU_ALL_CLASSES, MEMORY, STORAGE, gpu_class_key, is_dns_label};
use crate::quantity::{JsonQuantityError, Quantity};
use crate::resources::{Overflow, Resources};

/// The size a VirtualMachineClusterInstancetype gives one VM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceTypeSize {
    pub cpu: Quantity,
    pub memory: Quantity,
    /// `spec.gpus[].deviceName`: one device each.
    pub gpu_devices: Vec<String>,
}

/// Resolves instance type names. `Ok(None)`: no such instance type.
pub trait InstanceTypes {
    fn lookup(&self, name: &str) -> std::result::Result<Option<InstanceTypeSize>, String>;
}

/// What sizes resolve against: presets, instance types, and the GPU device -> class map.
pub struct Sizing<'a> {
    pub presets: &'a Presets,
    pub instance_types: &'a dyn InstanceTypes,
    pub gpu_device_classes: &'a BTreeMap<String, String>,
}

/// Why an application could not be evaluated, naming the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct EvalError {
    pub path: String,
    pub reason: String,
}

type Result<T> = std::result::Result<T, EvalError>;

/// Where a block's relative paths start, for messages (`spec`, `spec.nodeGroups.md0`).
#[derive(Clone, Copy)]
struct Place<'a> {
    cursor: Cursor<'a>,
    prefix: &'a str,
}

impl<'a> Place<'a> {
    fn name(&self, path: &str) -> String {
        format!("{}.{path}", self.prefix)
    }

    fn here(&self, reason: impl Into<String>) -> EvalError {
        EvalError {
            path: self.prefix.to_string(),
            reason: reason.into(),
        }
    }

    fn error(&self, path: &str, reason: impl Into<String>) -> EvalError {
        EvalError {
            path: self.name(path),
            reason: reason.into(),
        }
    }

    /// The value at `path`, `None` when absent or null after defaults.
    fn read(&self, path: &str) -> Result<Option<&'a Value>> {
        let cursor = self.cursor.at(path).map_err(|parent| {
            let at = if parent.is_empty() {
                self.prefix.to_string()
            } else {
                self.name(&parent)
            };
            EvalError {
                path: at,
                reason: format!("must be an object to read {path:?}"),
            }
        })?;
        Ok(cursor.value.filter(|v| !v.is_null()))
    }

    fn cursor(&self, path: &str) -> Result<Cursor<'a>> {
        self.read(path)?;
        Ok(self.cursor.at(path).expect("read checked the path"))
    }
}

/// What `reservation` charges for the application whose values (`spec`) `values` points at.
pub fn evaluate(
    reservation: &Reservation,
    values: Cursor<'_>,
    sizing: &Sizing<'_>,
) -> Result<Resources> {
    let place = Place {
        cursor: values,
        prefix: "spec",
    };
    evaluate_block(reservation, place, sizing)
}

fn evaluate_block(block: &Reservation, place: Place<'_>, sizing: &Sizing<'_>) -> Result<Resources> {
    if let Some(path) = &block.enabled_by {
        match place.read(path)? {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => return Ok(Resources::new()),
            Some(other) => {
                return Err(
                    place.error(path, format!("must be a boolean, not {}", describe(other)))
                );
            }
        }
    }
    let overflow = |_: Overflow| place.here("the reservation overflows");
    let mut replicas: u64 = 1;
    for path in &block.replicas {
        let factor = read_count(place, path)?.unwrap_or(1);
        replicas = replicas
            .checked_mul(factor)
            .ok_or_else(|| place.error(path, "the replica count overflows"))?;
    }

    let mut one = Resources::new();
    if block.sizes_replicas() {
        one = size_of_one(block, place, sizing)?;
    }
    for path in &block.storage {
        if let Some(q) = read_quantity(place, path)? {
            one.add(STORAGE, q).map_err(overflow)?;
        }
    }
    if let Some(path) = &block.gpus {
        one.add_all(&read_gpus(place, path, sizing)?)
            .map_err(overflow)?;
    }
    for each in &block.each {
        let collection = place.cursor(&each.path)?;
        let prefix = place.name(&each.path);
        let mut entries = match collection.value {
            None => Vec::new(),
            Some(v) => collection.entries().ok_or_else(|| {
                place.error(
                    &each.path,
                    format!("must be a map or a list, not {}", describe(v)),
                )
            })?,
        };
        if entries.is_empty()
            && let Some(default) = &each.when_empty
        {
            entries = collection.with_value(default).entries().unwrap_or_default();
        }
        for (key, item) in entries {
            let item_prefix = format!("{prefix}.{key}");
            let item_place = Place {
                cursor: item,
                prefix: &item_prefix,
            };
            if let Some(v) = item.value
                && !v.is_object()
            {
                return Err(EvalError {
                    path: item_prefix.clone(),
                    reason: format!("must be an object, not {}", describe(v)),
                });
            }
            one.add_all(&evaluate_block(&each.reservation, item_place, sizing)?)
                .map_err(overflow)?;
        }
    }
    for component in &block.components {
        one.add_all(&evaluate_block(component, place, sizing)?)
            .map_err(overflow)?;
    }
    one.scaled(replicas)
        .map_err(|_| place.here(format!("{replicas} replicas overflow the reservation")))
}

/// The size of one replica: explicit resources key by key, else the instance type, else
/// the preset (the precedence the Cozystack charts document).
fn size_of_one(block: &Reservation, place: Place<'_>, sizing: &Sizing<'_>) -> Result<Resources> {
    let mut cpu = None;
    let mut memory = None;
    if let Some(path) = &block.resources {
        match place.read(path)? {
            None => {}
            Some(Value::Object(_)) => {
                cpu = read_quantity(place, &format!("{path}.{CPU}"))?;
                memory = read_quantity(place, &format!("{path}.{MEMORY}"))?;
            }
            Some(other) => {
                return Err(
                    place.error(path, format!("must be an object, not {}", describe(other)))
                );
            }
        }
    }
    let mut size = Resources::new();
    if (cpu.is_none() || memory.is_none())
        && let Some(path) = &block.instance_type
        && let Some(name) = read_name(place, path)?
    {
        let it = sizing
            .instance_types
            .lookup(name)
            .map_err(|e| place.error(path, e))?
            .ok_or_else(|| place.error(path, format!("instance type {name:?} does not exist")))?;
        cpu = cpu.or(Some(it.cpu));
        memory = memory.or(Some(it.memory));
        for device in &it.gpu_devices {
            add_gpus(
                &mut size,
                sizing.gpu_device_classes.get(device).map(String::as_str),
                1,
            )
            .map_err(|_| place.error(path, "the GPU count overflows"))?;
        }
    }
    if (cpu.is_none() || memory.is_none())
        && let Some(path) = &block.preset
        && let Some(name) = read_name(place, path)?
    {
        let preset = sizing
            .presets
            .get(name)
            .ok_or_else(|| place.error(path, format!("unknown resource preset {name:?}")))?;
        cpu = cpu.or(Some(preset.get(CPU)));
        memory = memory.or(Some(preset.get(MEMORY)));
    }
    for (key, q) in [(CPU, cpu), (MEMORY, memory)] {
        let q = q.ok_or_else(|| place.here(format!("no {key} size: {}", sources(block, key))))?;
        size.add(key, q).expect("two keys cannot overflow");
    }
    Ok(size)
}

fn sources(block: &Reservation, key: &str) -> String {
    let mut said = Vec::new();
    if let Some(p) = &block.resources {
        said.push(format!("{p}.{key} is unset"));
    }
    if let Some(p) = &block.instance_type {
        said.push(format!("{p} is unset"));
    }
    if let Some(p) = &block.preset {
        said.push(format!("{p} is unset"));
    }
    said.join(", ")
}

fn read_gpus(place: Place<'_>, path: &str, sizing: &Sizing<'_>) -> Result<Resources> {
    let list = place.cursor(path)?;
    let mut out = Resources::new();
    let entries = match list.value {
        None => return Ok(out),
        Some(Value::Array(_)) => list.entries().expect("a list has entries"),
        Some(other) => {
            return Err(place.error(path, format!("must be a list, not {}", describe(other))));
        }
    };
    for (index, entry) in entries {
        let entry_prefix = place.name(&format!("{path}.{index}"));
        let entry_place = Place {
            cursor: entry,
            prefix: &entry_prefix,
        };
        match entry.value {
            Some(Value::Object(_)) => {}
            Some(other) => {
                return Err(entry_place.here(format!("must be an object, not {}", describe(other))));
            }
            None => continue,
        }
        let count = read_count(entry_place, "count")?.unwrap_or(1);
        let class = match read_name(entry_place, "class")? {
            Some(class) if !is_dns_label(class) => {
                return Err(entry_place.error(
                    "class",
                    format!("{class:?} is not a valid GPU class (a DNS label)"),
                ));
            }
            Some(class) => Some(class),
            None => read_name(entry_place, "name")?
                .and_then(|device| sizing.gpu_device_classes.get(device))
                .map(String::as_str),
        };
        add_gpus(&mut out, class, count)
            .map_err(|_| entry_place.here("the GPU count overflows"))?;
    }
    Ok(out)
}

/// Every GPU counts in the all-classes key, and in its class key when it has a class.
fn add_gpus(
    out: &mut Resources,
    class: Option<&str>,
    count: u64,
) -> std::result::Result<(), Overflow> {
    let q = Quantity::from_units(count);
    out.add(GPU_ALL_CLASSES, q)?;
    if let Some(class) = class {
        out.add(&gpu_class_key(class), q)?;
    }
    Ok(())
}

/// A non-negative integer count, `None` when absent.
fn read_count(place: Place<'_>, path: &str) -> Result<Option<u64>> {
    match place.read(path)? {
        None => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(count) = n.as_u64() {
                Ok(Some(count))
            } else if n.as_i64().is_some() {
                Err(place.error(path, format!("must not be negative, got {n}")))
            } else {
                Err(place.error(path, format!("must be a whole number, got {n}")))
            }
        }
        Some(other) => {
            Err(place.error(path, format!("must be an integer, not {}", describe(other))))
        }
    }
}

/// A quantity given as a string or a JSON number; `None` when absent or an empty string.
fn read_quantity(place: Place<'_>, path: &str) -> Result<Option<Quantity>> {
    match place.read(path)? {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(v) => Quantity::from_json(v).map(Some).map_err(|e| match e {
            JsonQuantityError::WrongType => {
                place.error(path, format!("must be a quantity, not {}", describe(v)))
            }
            JsonQuantityError::Invalid(e) => place.error(path, e.to_string()),
        }),
    }
}

/// A name (instance type, preset, class); `None` when absent or empty.
fn read_name<'a>(place: Place<'a>, path: &str) -> Result<Option<&'a str>> {
    match place.read(path)? {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(place.error(path, format!("must be a string, not {}", describe(other)))),
    }
}
