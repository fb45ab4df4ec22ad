//! What the UI gathers before it opens: the session to show (`--session`, `--continue` or a
//! new one), the model and agent lists for the pickers, the model's context window, the
//! commands and the skills.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result, anyhow};
use session_core::{Identifier as _, SessionId};
use session_runtime::models::{Catalog, split_model_ref};
use session_runtime::sessions::ListSessions;
use session_runtime::{ConfiguredModels, Runtime, RuntimeSetup};

use crate::app::PickerItem;

/// What the pickers and the status line know about the configuration.
#[derive(Debug, Clone, Default)]
pub struct Choices {
    /// `provider/model` references the runtime can call, with their context sizes.
    pub models: Vec<PickerItem>,
    /// Primary agents.
    pub agents: Vec<PickerItem>,
    /// The agent a prompt that names none runs with.
    pub default_agent: String,
    /// Configured commands (then the skills marked as commands): name and description.
    pub commands: Vec<(String, String)>,
    /// What `/skills` shows.
    pub skills: String,
    /// Context windows by `provider/model`.
    limits: std::collections::HashMap<String, u64>,
}

impl Choices {
    /// The context window of `reference`, when known.
    pub fn context_limit(&self, reference: &str) -> Option<u64> {
        self.limits.get(reference).copied().filter(|&l| l > 0)
    }
}

/// Reads the configuration for the pickers: the models of every provider that can be called
/// (a key, or a local server), the primary agents, the commands.
pub fn choices(setup: &RuntimeSetup, runtime: &Runtime) -> Result<Choices> {
    let loaded = session_runtime::setup::load_config(setup)?;
    let config = loaded.config;
    let catalog = Catalog::embedded()?;
    let models = ConfiguredModels::new(
        catalog.clone(),
        config.clone(),
        setup.env.clone(),
        setup.base_url.clone().and_then(|url| {
            setup.model.as_deref().and_then(split_model_ref).map(|(p, _)| (p.to_owned(), url))
        }),
    )?;
    // Configured providers first, then the catalog's.
    let mut ids: Vec<String> = config.provider.keys().cloned().collect();
    let known: BTreeSet<String> = ids.iter().cloned().collect();
    ids.extend(catalog.providers().map(|p| p.id.clone()).filter(|id| !known.contains(id)));
    let mut choices = Choices::default();
    for id in ids {
        let Ok(provider) = models.resolve_provider(&id) else { continue };
        if provider.api_key.is_none() && !provider.is_local() {
            continue;
        }
        let mut names: BTreeSet<String> =
            catalog.provider(&id).map(|p| p.models.keys().cloned().collect()).unwrap_or_default();
        names.extend(
            config
                .provider
                .get(&id)
                .map(|p| p.models.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default(),
        );
        for name in names {
            let Some(model) = models.resolve_model(&id, &name) else { continue };
            let reference = format!("{id}/{name}");
            let detail = match model.limit.context {
                0 => String::new(),
                context => format!("{} context", crate::view::tokens(context)),
            };
            choices.limits.insert(reference.clone(), model.limit.context);
            choices.models.push(PickerItem { label: reference.clone(), detail, value: reference });
        }
    }
    let home = setup.home.as_ref().map(|h| h.to_string_lossy().into_owned());
    let agents = session_runtime::agents::configured_agents(&config, home.as_deref())?;
    choices.default_agent = session_runtime::agents::default_agent(&config, &agents)?;
    for (name, agent) in agents.iter().filter(|(name, a)| a.is_primary() && runtime.has_agent(name)) {
        let detail = agent.description.clone().unwrap_or_default();
        choices.agents.push(PickerItem { label: name.clone(), detail, value: name.clone() });
    }
    choices.commands = runtime
        .commands()
        .iter()
        .map(|(name, command)| (name.clone(), command.description.clone().unwrap_or_default()))
        .collect();
    let skills = runtime.skills();
    let hidden: BTreeSet<String> = choices.commands.iter().map(|(name, _)| name.clone()).collect();
    choices.commands.extend(
        skills
            .commands()
            .filter(|skill| !hidden.contains(&skill.skill.name))
            .map(|skill| (skill.skill.name.clone(), skill.skill.description.clone())),
    );
    choices.skills = skills.report();
    Ok(choices)
}

/// The session to open: `--session`, the folder's latest with `--continue`, else a new one
/// (true when made here).
pub async fn open_session(
    session: Option<&str>,
    continue_latest: bool,
    runtime: &Runtime,
) -> Result<(SessionId, bool)> {
    if let Some(id) = session {
        let id = SessionId::parse(id).map_err(|error| anyhow!("--session: {error}"))?;
        let found = runtime.session(&id).await.map_err(|error| anyhow!("--session {id}: {error}"))?;
        return Ok((found.id, false));
    }
    if continue_latest {
        let query = ListSessions {
            limit: 1,
            directory: Some(runtime.worktree().to_string_lossy().into_owned()),
            roots_only: true,
            ..ListSessions::default()
        };
        let page = runtime.list_sessions(&query).await?;
        let latest = page.sessions.into_iter().next().ok_or_else(|| {
            anyhow!(
                "--continue: no session in {} yet; run without --continue to start one",
                runtime.worktree().display()
            )
        })?;
        return Ok((latest.id, false));
    }
    let created = runtime.create_session(None).await.context("creating a session")?;
    Ok((created.id, true))
}

/// The folder's sessions for the picker, newest first, with their titles and times.
pub async fn session_items(runtime: &Runtime) -> Result<Vec<PickerItem>> {
    let query = ListSessions {
        limit: 200,
        directory: Some(runtime.worktree().to_string_lossy().into_owned()),
        roots_only: true,
        ..ListSessions::default()
    };
    let page = runtime.list_sessions(&query).await?;
    Ok(page
        .sessions
        .into_iter()
        .map(|s| PickerItem {
            label: s.title.clone(),
            detail: format!("{}  {}", time_of(s.time.updated), s.id),
            value: s.id.to_string(),
        })
        .collect())
}

/// An epoch-ms time as `YYYY-MM-DD HH:MM` (UTC).
pub fn time_of(epoch_ms: u64) -> String {
    let iso = session_core::calendar::iso_time(epoch_ms);
    iso.get(..16).map(|t| t.replace('T', " ")).unwrap_or(iso)
}
