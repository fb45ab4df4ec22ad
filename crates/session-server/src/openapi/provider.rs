//! The operations of the providers and models clients pick from.

use serde_json::json;

use super::*;

/// `GET /config/providers`.
pub(crate) fn config_providers() -> Operation {
    read(
        "config.providers",
        "The providers this server can call, with their models and default model",
        vec![],
        providers(),
        false,
    )
}

/// `GET /provider`.
pub(crate) fn list() -> Operation {
    read(
        "provider.list",
        "The same providers (every one is connected) and their default models",
        vec![],
        json!({"type": "object", "required": ["all", "default", "connected"], "properties": {
        "all": array(reference("Provider")), "default": {"type": "object"}, "connected": array(string())}}),
        false,
    )
}

/// `GET /provider/auth`.
pub(crate) fn auth() -> Operation {
    read(
        "provider.auth",
        "Sign-in methods: none (keys come from the environment and the configuration)",
        vec![],
        json!({"type": "object"}),
        false,
    )
}

/// `GET /api/provider`.
pub(crate) fn list_v2() -> Operation {
    read(
        "v2.provider.list",
        "The providers, v2 shape",
        location(),
        located(array(json!({"type": "object"}))),
        false,
    )
}

/// `GET /api/model`.
pub(crate) fn models_v2() -> Operation {
    read(
        "v2.model.list",
        "The models, v2 shape",
        location(),
        located(array(json!({"type": "object"}))),
        false,
    )
}
