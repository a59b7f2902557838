//! What sizes resolve against: the preset table, the instance types by name (the one lookup
//! an evaluation makes), and the GPU device -> class map.

use std::collections::BTreeMap;

use super::presets::Presets;
use crate::quantity::Quantity;

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
