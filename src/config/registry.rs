//! `[pipelines.<name>.schema_registry]`: where a pipeline's schema registry is and how to
//! reach it. The client is [`crate::decode::registry`].

use serde::{Deserialize, Serialize};

use crate::common::units::HumanDuration;

/// `[pipelines.<name>.schema_registry]`
#[derive(Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// Base URL, e.g. `http://registry:8081`.
    pub url: String,
    /// Basic authentication.
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    /// Bearer authentication.
    #[serde(default)]
    pub token: Option<String>,
    /// Per request.
    #[serde(default = "default_timeout")]
    pub timeout: HumanDuration,
    /// With `create = true` and no `schema`: a missing table is created at start from this
    /// subject's latest schema (e.g. `orders-value`), before any record arrives.
    #[serde(default)]
    pub subject: Option<String>,
    /// `confluent` (ids of 4 bytes, `GET /schemas/ids/{id}`) or `apicurio` (Apicurio's own
    /// serdes: global ids of 8 bytes, `GET /apis/registry/v2/ids/globalIds/{id}`).
    #[serde(default)]
    pub api: RegistryApi,
    /// A PEM file of certificate authorities to trust besides the system's (a registry behind
    /// a private CA).
    #[serde(default)]
    pub ca_file: Option<String>,
}

/// The registry's API and wire format (`schema_registry.api`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum RegistryApi {
    /// Confluent's REST API; records framed with 4-byte schema ids.
    #[default]
    Confluent,
    /// Apicurio's own serdes: 8-byte global ids.
    Apicurio,
}

setting_values!(RegistryApi { "confluent" => Confluent, "apicurio" => Apicurio });

fn default_timeout() -> HumanDuration {
    HumanDuration::from_secs(10)
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig {
            url: String::new(),
            username: None,
            password: None,
            token: None,
            timeout: default_timeout(),
            subject: None,
            api: RegistryApi::Confluent,
            ca_file: None,
        }
    }
}

impl std::fmt::Debug for RegistryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryConfig")
            .field("url", &crate::config::redact::without_userinfo(&self.url))
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("subject", &self.subject)
            .field("api", &self.api)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}
