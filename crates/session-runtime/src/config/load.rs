//! Loading: read, substitute, parse and check each layer, then merge them into one [`Config`].

use std::io;
use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use serde_json::Value;

use super::check::type_error_merged;
use super::discover::ConfigSources;
use super::error::{ConfigError, ConfigWarning, WarningReason};
use super::layer::ConfigLayer;
use super::markdown::markdown_layer;
use super::merge::merge;
use super::restrict::{Restrictions, merge_untrusted};
use super::substitute::{Resolver, substitute};
use super::trust::{UntrustedResolver, restrict_untrusted};
use super::types::Config;

/// The merged configuration and every warning of its layers.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    /// The typed configuration.
    pub config: Config,
    /// Unknown keys, one per file and key, in load order.
    pub warnings: Vec<ConfigWarning>,
    /// The files that were loaded, lowest layer first.
    pub files: Vec<PathBuf>,
}

/// Parses the text of the config file at `path`: substitutions, JSONC, checks.
pub fn parse_layer(text: &str, path: &Path, resolver: &dyn Resolver) -> Result<ConfigLayer, ConfigError> {
    let text = substitute(text, path, resolver)?;
    let value = parse_jsonc(&text, path)?;
    ConfigLayer::from_value(path, value)
}

/// Loads every file of `sources` through `resolver` and merges them, lowest layer first.
pub fn load(sources: &ConfigSources, resolver: &dyn Resolver) -> Result<LoadedConfig, ConfigError> {
    combine(load_layers(sources, resolver)?)
}

/// Reads and checks every file of `sources`, lowest layer first, without merging them
/// (`session config check` shows where each key came from).
pub fn load_layers(
    sources: &ConfigSources,
    resolver: &dyn Resolver,
) -> Result<Vec<ConfigLayer>, ConfigError> {
    let mut layers = Vec::new();
    for path in sources.files() {
        let explicit = sources.explicit.as_deref() == Some(path);
        let untrusted = sources.is_project(path) && !sources.is_trusted(path);
        if is_markdown(path) {
            // Project markdown stays inside the project; the user's inside their config folder.
            let base = path.parent().and_then(Path::parent).unwrap_or(path);
            let root = match sources.project_markdown.iter().any(|p| p == path) {
                true => sources.project_root.as_deref().unwrap_or(base),
                false => base,
            };
            if let Some(mut layer) = markdown_layer(path, root)? {
                if untrusted {
                    restrict_layer(&mut layer, Vec::new());
                }
                layers.push(layer);
            }
            continue;
        }
        if untrusted {
            let root = sources.project_root.as_deref().or(path.parent()).unwrap_or(path);
            let confined = UntrustedResolver::new(resolver, root);
            if let Some(layer) = untrusted_layer(path, &confined)? {
                layers.push(layer);
            }
            continue;
        }
        let text = match resolver.read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound && explicit => {
                return Err(ConfigError::MissingExplicit { path: path.to_path_buf() });
            }
            // A discovered file that vanished since discovery configures nothing.
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(ConfigError::Read { path: path.to_path_buf(), source }),
        };
        layers.push(parse_layer(&text, path, resolver)?);
    }
    Ok(layers)
}

/// A project layer of an untrusted folder: read through `resolver` (no environment, no file
/// outside the project), checked, then stripped of what it may not set; every removal and
/// refused substitution becomes a warning.
fn untrusted_layer(
    path: &Path,
    resolver: &UntrustedResolver<'_>,
) -> Result<Option<ConfigLayer>, ConfigError> {
    let text = match resolver.read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ConfigError::Read { path: path.to_path_buf(), source }),
    };
    let mut layer = parse_layer(&text, path, resolver)?;
    let refused = resolver.refused.borrow().clone();
    restrict_layer(&mut layer, refused);
    Ok(Some(layer))
}

/// Strips an untrusted layer of what it may not set; each removal (and each of `refused`, the
/// substitutions refused while reading it) becomes a warning.
fn restrict_layer(layer: &mut ConfigLayer, refused: Vec<String>) {
    layer.untrusted = true;
    for key in refused.into_iter().chain(restrict_untrusted(&mut layer.value)) {
        layer.warnings.push(ConfigWarning {
            path: layer.path.clone(),
            key,
            reason: WarningReason::Untrusted,
        });
    }
}

fn is_markdown(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "md")
}

/// Merges checked layers, lowest first, into the typed configuration. An untrusted layer only
/// adds restrictions (see [`Restrictions`]): it never removes or weakens a rule or a sandbox
/// setting of the layers below it.
pub fn combine(layers: Vec<ConfigLayer>) -> Result<LoadedConfig, ConfigError> {
    let mut merged = Value::Object(serde_json::Map::new());
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    let mut restrictions = Restrictions::default();
    for layer in layers {
        warnings.extend(layer.warnings);
        merged = if layer.untrusted {
            merge_untrusted(merged, layer.value, &layer.path, &mut restrictions, &mut warnings)
        } else {
            merge(merged, layer.value)
        };
        files.push(layer.path);
    }
    // Each layer passed the checks and merging keeps every value where a layer had it, so this
    // cannot fail in practice; an error still names the merged result rather than panicking.
    let mut config: Config =
        serde_path_to_error::deserialize(&merged).map_err(|error| type_error_merged(&merged, &error))?;
    config.restrictions = restrictions;
    if config.warn_unsupported == Some(false) {
        warnings.retain(|warning| warning.reason != WarningReason::Unsupported);
    }
    Ok(LoadedConfig { config, warnings, files })
}

fn parse_jsonc(text: &str, path: &Path) -> Result<Value, ConfigError> {
    // JSONC as OpenCode reads it: JSON plus comments and trailing commas, nothing looser.
    let options = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    jsonc_parser::parse_to_serde_value::<Value>(text, &options).map_err(|error| ConfigError::Parse {
        path: path.to_path_buf(),
        line: error.line_display(),
        column: error.column_display(),
        message: error.kind().to_string(),
    })
}
