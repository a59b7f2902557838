//! Kubewarden policy: Cozystack tenant quotas as reservation limits.
//!
//! This file holds only the waPC entry points and their wiring; the logic lives in the
//! modules below (see the README's "Where things are").

use guest::prelude::*;
use kubewarden_policy_sdk::wapc_guest as guest;

use kubewarden_policy_sdk::{protocol_version_guest, validate_settings};

pub mod definition;
pub mod evaluate;
pub mod pool;
pub mod presets;
pub mod quantity;
pub mod resources;
pub mod settings;
pub mod values;

use settings::Settings;

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings::<Settings>);
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    let _ = payload;
    kubewarden_policy_sdk::accept_request()
}
