//! Evaluating a reservation block against one application's values: what it reserves.
//!
//! Pure apart from the [`super::sizing::InstanceTypes`] lookup, so every rule is testable natively.

use serde_json::Value;

use super::definition::{Each, Reservation};
use super::read::{
    EvalError, Place, Result, amount, count, holds, is_set, name, read_count, read_name,
    read_quantity,
};
use super::sizing::Sizing;
use super::terms::{Gpus, Path, Term};
use super::values::Cursor;
use crate::json::describe;
use crate::keys::{CPU, GPU_ALL_CLASSES, MEMORY, STORAGE, gpu_class_key, is_dns_label};
use crate::quantity::Quantity;
use crate::resources::{Overflow, Resources};

/// What `reservation` charges for the application whose values (`spec`) `values` points at.
pub fn evaluate(
    reservation: &Reservation,
    values: Cursor<'_>,
    sizing: &Sizing<'_>,
) -> Result<Resources> {
    evaluate_block(reservation, Place::top(values), sizing)
}

fn evaluate_block(block: &Reservation, place: Place<'_>, sizing: &Sizing<'_>) -> Result<Resources> {
    if !applies(block, place)? {
        return Ok(Resources::new());
    }
    let overflow = |_: Overflow| place.here("the reservation overflows");
    let mut replicas: u64 = 1;
    for term in &block.replicas {
        let factor = count(place, term)?.unwrap_or(1);
        replicas = replicas
            .checked_mul(factor)
            .ok_or_else(|| place.here("the replica count overflows"))?;
    }

    let mut one = Resources::new();
    if block.sizes_replicas() {
        one = size_of_one(block, place, sizing)?;
    }
    for (key, q) in block.fixed.iter().flatten() {
        one.add(key, *q).map_err(overflow)?;
    }
    for term in &block.storage {
        if let Some(q) = amount(place, term)? {
            one.add(STORAGE, q).map_err(overflow)?;
        }
    }
    if let Some(gpus) = &block.gpus {
        one.add_all(&read_gpus(place, gpus, sizing)?)
            .map_err(overflow)?;
    }
    for each in &block.each {
        one.add_all(&evaluate_each(each, place, sizing)?)
            .map_err(overflow)?;
    }
    for component in &block.components {
        one.add_all(&evaluate_block(component, place, sizing)?)
            .map_err(overflow)?;
    }
    one.scaled(replicas)
        .map_err(|_| place.here(format!("{replicas} replicas overflow the reservation")))
}

/// Whether the block charges at all: its `when` conditions hold and its `enabledBy` switch is
/// on; refused when a value it cannot charge (`unchargeable`) is set.
fn applies(block: &Reservation, place: Place<'_>) -> Result<bool> {
    for condition in &block.when {
        if !holds(place, condition)? {
            return Ok(false);
        }
    }
    if let Some(path) = &block.enabled_by {
        match place.read(path)? {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => return Ok(false),
            Some(other) => {
                return Err(
                    place.error(path, format!("must be a boolean, not {}", describe(other)))
                );
            }
        }
    }
    for path in &block.unchargeable {
        if is_set(place.read(path)?) {
            return Err(place.error(
                path,
                "reaches the chart verbatim and can change what it renders past anything this policy reads, so it cannot be charged",
            ));
        }
    }
    Ok(true)
}

/// An `each` block: its reservation charged once per item of the collection (or of its
/// `whenEmpty` default when the collection is empty), each item an object.
fn evaluate_each(each: &Each, place: Place<'_>, sizing: &Sizing<'_>) -> Result<Resources> {
    let collection = place.cursor_at(&each.path)?;
    let prefix = place.name_of(&each.path);
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
    let mut all = Resources::new();
    for (key, item) in entries {
        let item_prefix = format!("{prefix}.{key}");
        if let Some(v) = item.value
            && !v.is_object()
        {
            return Err(EvalError {
                path: item_prefix.clone(),
                reason: format!("must be an object, not {}", describe(v)),
            });
        }
        let item_place = place.item(item, &item_prefix);
        all.add_all(&evaluate_block(&each.reservation, item_place, sizing)?)
            .map_err(|_| place.here("the reservation overflows"))?;
    }
    Ok(all)
}

/// The size of one replica, key by key: the explicit `size`, else a cozy-lib `resources`
/// map, else the instance type, else the preset (the precedence the Cozystack charts
/// document). The other keys of `resources` are extended resource limits of the container.
fn size_of_one(block: &Reservation, place: Place<'_>, sizing: &Sizing<'_>) -> Result<Resources> {
    let mut cpu = None;
    let mut memory = None;
    if let Some(size) = &block.size {
        if let Some(term) = &size.cpu {
            cpu = amount(place, term)?;
        }
        if let Some(term) = &size.memory {
            memory = amount(place, term)?;
        }
    }
    let mut extended = Resources::new();
    if let Some(path) = &block.resources {
        let (explicit_cpu, explicit_memory) = read_resources(place, path, sizing, &mut extended)?;
        cpu = cpu.or(explicit_cpu);
        memory = memory.or(explicit_memory);
    }
    let mut size = extended;
    let blame = |t: &Term<String>, reason: String| match t.blame() {
        Some(path) => place.error(path, reason),
        None => place.here(reason),
    };
    if (cpu.is_none() || memory.is_none())
        && let Some(term) = &block.instance_type
        && let Some(name) = name(place, term)?
    {
        let it = sizing
            .instance_types
            .lookup(&name)
            .map_err(|e| blame(term, e))?
            .ok_or_else(|| blame(term, format!("instance type {name:?} does not exist")))?;
        cpu = cpu.or(Some(it.cpu));
        memory = memory.or(Some(it.memory));
        for device in &it.gpu_devices {
            add_gpus(
                &mut size,
                sizing.gpu_device_classes.get(device).map(String::as_str),
                1,
            )
            .map_err(|_| blame(term, "the GPU count overflows".into()))?;
        }
    }
    if (cpu.is_none() || memory.is_none())
        && let Some(term) = &block.preset
        && let Some(name) = name(place, term)?
    {
        let preset = sizing
            .presets
            .get(&name)
            .ok_or_else(|| blame(term, format!("unknown resource preset {name:?}")))?;
        cpu = cpu.or(Some(preset.get(CPU)));
        memory = memory.or(Some(preset.get(MEMORY)));
    }
    for (key, q) in [(CPU, cpu), (MEMORY, memory)] {
        let q = q.ok_or_else(|| place.here(format!("no {key} size: {}", sources(block, key))))?;
        size.add(key, q)
            .map_err(|_| place.here("the reservation overflows"))?;
    }
    Ok(size)
}

/// A cozy-lib resources map (`cozy-lib.resources.sanitize`): `cpu` and `memory` are the
/// container's limits, `ephemeral-storage` is no quota key this policy checks, a GPU device
/// named in `gpuDeviceClasses` is that many devices, and any other key (which cozy-lib also
/// copies into the limits) cannot be charged, so it is refused.
fn read_resources(
    place: Place<'_>,
    path: &Path,
    sizing: &Sizing<'_>,
    extended: &mut Resources,
) -> Result<(Option<Quantity>, Option<Quantity>)> {
    let map = match place.read(path)? {
        None => return Ok((None, None)),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(place.error(path, format!("must be an object, not {}", describe(other))));
        }
    };
    // cozy-lib merges the map over the preset with Sprig's mergeOverwrite (mergo 1.0.1), which
    // writes every key it is given: an empty one replaces the preset's and renders an empty
    // limit (`null` as `<nil>`), which neither the chart's schema nor Kubernetes accepts. A
    // `null` the chart's values.yaml has a default for (the schema's default) is deleted by
    // Helm's coalesce first, and the default is read.
    let given = place.cursor_at(path)?;
    if let Some(key) = map.iter().find_map(|(k, v)| {
        let empty = v.as_str() == Some("") || (v.is_null() && given.child(k).value.is_none());
        empty.then_some(k)
    }) {
        return Err(place.error(
            &place.below(path, key),
            format!("is empty: the container's {key} limit renders empty, which Kubernetes refuses (cozy-lib merges resources over the preset with Sprig's mergeOverwrite, which writes even an empty value, so the preset's {key} is not used)"),
        ));
    }
    let mut sizes = [None, None];
    for (slot, key) in sizes.iter_mut().zip([CPU, MEMORY]) {
        let field = place.below(path, key);
        *slot = read_quantity(place, &field)?;
        if slot.is_some_and(Quantity::is_zero) {
            return Err(place.error(
                &field,
                format!("an explicit 0 renders a container without a {key} limit (it wins over any preset), which no budget can bound"),
            ));
        }
    }
    for key in map
        .keys()
        .filter(|k| ![CPU, MEMORY, EPHEMERAL_STORAGE].contains(&k.as_str()))
    {
        let field = place.below(path, key);
        let Some(class) = sizing.gpu_device_classes.get(key) else {
            return Err(place.error(
                &field,
                format!("{key:?} is an extended resource the chart sets as a container limit, and this policy can charge only cpu, memory and the GPU devices named in the gpuDeviceClasses setting"),
            ));
        };
        // Read from the map: a resource name holds dots (`nvidia.com/gpu`), a path cannot.
        let devices = Quantity::from_json(&map[key]).map_err(|e| {
            place.error(
                &field,
                match e {
                    crate::quantity::JsonQuantityError::WrongType => {
                        format!("must be a quantity, not {}", describe(&map[key]))
                    }
                    crate::quantity::JsonQuantityError::Invalid(e) => e.to_string(),
                },
            )
        })?;
        let whole = u64::try_from(devices.nanos() / 1_000_000_000)
            .ok()
            .filter(|_| devices.nanos() % 1_000_000_000 == 0)
            .ok_or_else(|| place.error(&field, "must be a whole number of devices"))?;
        add_gpus(extended, Some(class), whole)
            .map_err(|_| place.error(&field, "the GPU count overflows"))?;
    }
    let [cpu, memory] = sizes;
    Ok((cpu, memory))
}

/// The resource cozy-lib sizes beside cpu and memory, which no tenant quota key bounds here.
const EPHEMERAL_STORAGE: &str = "ephemeral-storage";

fn sources(block: &Reservation, key: &str) -> String {
    let mut said = Vec::new();
    if block.size.is_some() {
        said.push(format!("size.{key} reads nothing"));
    }
    if let Some(p) = &block.resources {
        said.push(format!("{p}.{key} is unset"));
    }
    for term in block.instance_type.iter().chain(&block.preset) {
        match term.blame() {
            Some(p) => said.push(format!("{p} is unset")),
            None => said.push("a literal name reads nothing".into()),
        }
    }
    said.join(", ")
}

fn read_gpus(place: Place<'_>, gpus: &Gpus, sizing: &Sizing<'_>) -> Result<Resources> {
    let path = gpus.path();
    let list = place.cursor_at(path)?;
    let mut out = Resources::new();
    let entries = match list.value {
        None => return Ok(out),
        Some(Value::Array(_)) => list.entries().unwrap_or_default(),
        Some(other) => {
            return Err(place.error(path, format!("must be a list, not {}", describe(other))));
        }
    };
    let list_name = place.name_of(path);
    for (index, entry) in entries {
        let entry_prefix = format!("{list_name}.{index}");
        let entry_place = place.item(entry, &entry_prefix);
        match entry.value {
            Some(Value::Object(_)) => {}
            Some(other) => {
                return Err(entry_place.here(format!("must be an object, not {}", describe(other))));
            }
            None => continue,
        }
        let field = Path::here;
        let device = read_name(entry_place, &field("name"))?;
        let (class, count) = match gpus {
            Gpus::Devices(_) => {
                let device = device.ok_or_else(|| {
                    entry_place.error(&field("name"), "must name the device to attach")
                })?;
                (sizing.gpu_device_classes.get(device).map(String::as_str), 1)
            }
            Gpus::Entries(_) => {
                let count = read_count(entry_place, &field("count"))?.unwrap_or(1);
                let class = match read_name(entry_place, &field("class"))? {
                    Some(class) if !is_dns_label(class) => {
                        return Err(entry_place.error(
                            &field("class"),
                            format!("{class:?} is not a valid GPU class (a DNS label)"),
                        ));
                    }
                    Some(class) => Some(class),
                    None => device
                        .and_then(|device| sizing.gpu_device_classes.get(device))
                        .map(String::as_str),
                };
                (class, count)
            }
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
