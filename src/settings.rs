use serde::Deserialize;

#[derive(Deserialize, Default, Debug, Clone)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {}

impl kubewarden_policy_sdk::settings::Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}
