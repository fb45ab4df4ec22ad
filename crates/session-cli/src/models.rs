//! `session models`: the models `session run` can use, from the catalog with the same
//! configuration layers `run` reads laid over it; the local presets (any model their server
//! has); and, marked, the providers `run` cannot call.

use std::collections::BTreeSet;
use std::io::Write;

use anyhow::Result;
use session_core::ModelRef;
use session_llm::{Catalog, CatalogModel};
use session_runtime::{ConfiguredModels, RuntimeSetup};
use session_server::{ClientModel, ClientProvider, ProviderSource};

use crate::terminal::clean;

/// What `session models` prints for one provider.
#[derive(Debug, Clone, PartialEq)]
enum Listing {
    /// Models `run` can call, with their limits and prices; a local server (`any` holds its
    /// address) takes other model ids too.
    Models {
        /// The listed models.
        models: Vec<CatalogModel>,
        /// A local server's address: ids not listed work as well.
        any: Option<String>,
    },
    /// A local server that serves whatever models it has: any id works, with no limits or
    /// prices known.
    AnyModel {
        /// Where requests go.
        base_url: String,
    },
    /// A provider `run` refuses, and why.
    Unusable(String),
}

/// Prints the models of every provider (or of `only`), one per line, tab-separated; the
/// configuration's warnings go to stderr as `run` prints them.
pub fn list(setup: &RuntimeSetup, only: Option<&str>, out: &mut impl Write) -> Result<()> {
    let loaded = session_runtime::setup::load_config(setup)?;
    for warning in &loaded.warnings {
        eprintln!("session: warning: {warning}");
    }
    let catalog = Catalog::embedded()?;
    let ids = provider_ids(&catalog, &loaded.config);
    let models = ConfiguredModels::new(catalog.clone(), loaded.config.clone(), setup.env.clone(), None)?;
    let mut found = false;
    for id in ids.iter().filter(|id| only.is_none_or(|wanted| wanted == id.as_str())) {
        let listed = listed_models(&catalog, &loaded.config, id);
        let listing = match models.resolve_provider(id) {
            Err(error) => Listing::Unusable(error.to_string()),
            Ok(provider) if listed.is_empty() => Listing::AnyModel { base_url: provider.base_url },
            Ok(provider) => Listing::Models {
                models: listed.iter().filter_map(|model| models.resolve_model(id, model)).collect(),
                // The catalog's OpenAI-compatible providers take any id (with unknown limits).
                any: (provider.is_local() && catalog.provider(id).is_some_and(|p| p.is_openai_compatible()))
                    .then_some(provider.base_url),
            },
        };
        found = true;
        write_listing(out, id, &listing)?;
    }
    if !found && let Some(provider) = only {
        anyhow::bail!(
            "no provider {provider:?} in the catalog or your config; `session models` lists every provider"
        );
    }
    Ok(())
}

/// Every provider id of the catalog and the configuration.
fn provider_ids(catalog: &Catalog, config: &session_runtime::config::Config) -> BTreeSet<String> {
    let mut ids: BTreeSet<String> = catalog.providers().map(|p| p.id.clone()).collect();
    ids.extend(config.provider.keys().cloned());
    ids
}

/// The model ids of provider `id`: the catalog's and the configuration's.
fn listed_models(catalog: &Catalog, config: &session_runtime::config::Config, id: &str) -> BTreeSet<String> {
    let configured = config.provider.get(id).map(|p| p.models.keys().cloned().collect::<Vec<_>>());
    catalog
        .provider(id)
        .map(|p| p.models.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(configured.unwrap_or_default())
        .collect()
}

/// The providers `session serve` can call, with their models, as OpenCode's clients list
/// them: those with a key or on this machine, and always the one of `default` (whose model
/// is listed even when a local server's catalog entry has no models).
pub fn client_providers(setup: &RuntimeSetup, default: &ModelRef) -> Result<Vec<ClientProvider>> {
    let loaded = session_runtime::setup::load_config(setup)?;
    let catalog = Catalog::embedded()?;
    let models = ConfiguredModels::new(catalog.clone(), loaded.config.clone(), setup.env.clone(), None)?;
    let mut providers = Vec::new();
    for id in provider_ids(&catalog, &loaded.config) {
        let Ok(provider) = models.resolve_provider(&id) else { continue };
        let is_default = default.provider_id == id;
        // A local preset nobody configured may not be running: only keys and config count.
        let configured = loaded.config.provider.contains_key(&id);
        if !is_default && !configured && (provider.api_key.is_none() || provider.is_local()) {
            continue;
        }
        let mut listed = listed_models(&catalog, &loaded.config, &id);
        if is_default {
            listed.insert(default.model_id.clone());
        }
        let source = match (catalog.provider(&id).is_some(), loaded.config.provider.contains_key(&id)) {
            (false, _) => ProviderSource::Custom,
            (true, true) => ProviderSource::Config,
            (true, false) => ProviderSource::Env,
        };
        let name = loaded
            .config
            .provider
            .get(&id)
            .and_then(|p| p.name.clone())
            .or_else(|| catalog.provider(&id).map(|p| p.name.clone()))
            .unwrap_or_else(|| id.clone());
        let models = listed
            .iter()
            .map(|model| {
                let found = models.resolve_model(&id, model).unwrap_or_else(|| CatalogModel::unknown(model));
                // The key is the id clients send back; the catalog entry may call the API by another.
                let mut client = ClientModel::new(&id, &provider.npm, &provider.base_url, &found);
                client.set_id(model);
                (model.clone(), client)
            })
            .collect();
        providers.push(ClientProvider {
            id: id.clone(),
            name,
            source,
            env: provider.key_vars.clone(),
            options: serde_json::Map::new(),
            models,
        });
    }
    Ok(providers)
}

fn write_listing(out: &mut impl Write, provider: &str, listing: &Listing) -> std::io::Result<()> {
    // Ids from a config file are shown without their control sequences, as all human output.
    let provider = &*clean(provider);
    match listing {
        Listing::Models { models, any } => {
            for model in models {
                writeln!(
                    out,
                    "{provider}/{}\tcontext {}\toutput {}\t${}/${} per 1M tokens",
                    clean(&model.id),
                    model.limit.context,
                    model.limit.output,
                    model.cost.input.normalize(),
                    model.cost.output.normalize()
                )?;
            }
            match any {
                Some(base_url) => write_any(out, provider, base_url),
                None => Ok(()),
            }
        }
        Listing::AnyModel { base_url } => write_any(out, provider, base_url),
        Listing::Unusable(why) => writeln!(out, "{provider}\tnot usable by `session run`: {}", clean(why)),
    }
}

/// The line of a local server: any model id it has works.
fn write_any(out: &mut impl Write, provider: &str, base_url: &str) -> std::io::Result<()> {
    writeln!(
        out,
        "{}/*\tany model the server at {} has\tno limits or prices known",
        clean(provider),
        clean(base_url)
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn setup(dir: &std::path::Path, env: HashMap<String, String>) -> RuntimeSetup {
        RuntimeSetup {
            cwd: dir.to_path_buf(),
            home: Some(dir.to_path_buf()),
            data_dir: dir.join("data"),
            env,
            model: None,
            base_url: None,
            db: None,
            store_options: session_store::StoreOptions::default(),
        }
    }

    #[test]
    fn presets_are_listed_and_refused_providers_marked() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        list(&setup(dir.path(), HashMap::new()), None, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for preset in ["ollama/*", "vllm/*", "llama.cpp/*", "lmstudio/*"] {
            assert!(text.lines().any(|line| line.starts_with(preset)), "{preset}");
        }
        let bedrock = text.lines().find(|line| line.starts_with("amazon-bedrock")).unwrap();
        assert!(bedrock.contains("not usable by `session run`"), "{bedrock}");
        assert!(
            !text.lines().any(|line| line.starts_with("amazon-bedrock/")),
            "no models of a refused provider"
        );
        assert!(text.lines().any(|line| line.starts_with("anthropic/claude-sonnet-4-5\t")));
    }

    #[test]
    fn a_missing_session_config_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let env = HashMap::from([("SESSION_CONFIG".to_owned(), "missing.json".to_owned())]);
        let error = list(&setup(dir.path(), env), None, &mut Vec::new()).unwrap_err();
        assert!(error.to_string().contains("missing.json"), "{error}");
    }
}
