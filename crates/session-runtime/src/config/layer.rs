//! A configuration layer: one file's JSON, checked, with its warnings (a leaf that loading,
//! markdown layers and key origins share).

use std::path::PathBuf;

use serde_json::Value;

use super::check::check_layer;
use super::error::{ConfigError, ConfigWarning};

/// One checked layer: a file's JSON after substitution and normalisation.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigLayer {
    /// Where the layer came from (a file, or a name chosen by an embedder).
    pub path: PathBuf,
    /// The layer's JSON, keys in written order.
    pub value: Value,
    /// Unknown keys of this layer.
    pub warnings: Vec<ConfigWarning>,
    /// A project layer of a folder the user has not trusted: [`super::combine`] lets it only add
    /// restrictions to the layers below it.
    pub untrusted: bool,
}

impl ConfigLayer {
    /// Checks a layer built in code; `path` names it in errors and warnings.
    pub fn from_value(path: impl Into<PathBuf>, mut value: Value) -> Result<Self, ConfigError> {
        let path = path.into();
        let warnings = check_layer(&mut value, &path)?;
        Ok(Self { path, value, warnings, untrusted: false })
    }
}
