//! `session skills list`: the skills a run here would offer the model, where each came from,
//! what the default agent's rules make of it, and the files that were skipped and why.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use session_core::permission::{Action, evaluate};
use session_runtime::RuntimeSetup;
use session_runtime::config::SkillScope;

/// The arguments of `session skills`.
#[derive(Debug, clap::Args)]
pub struct SkillsArgs {
    #[command(subcommand)]
    action: SkillsAction,
}

/// What `session skills` does.
#[derive(Debug, Subcommand)]
pub enum SkillsAction {
    /// Lists the skills (name, whose, file, description) and the skill files skipped.
    List,
}

/// Carries out `args` for the project of `setup`, writing to `out`.
pub fn main(setup: &RuntimeSetup, args: SkillsArgs, out: &mut impl Write) -> Result<ExitCode> {
    match args.action {
        SkillsAction::List => list(setup, out)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints every skill by name: whose folder it came from, whether it is a slash command, what
/// the default agent's rules say (`asks`, `denied`: a denied skill is neither listed to the
/// model nor loadable), its description and file; then the problems.
pub fn list(setup: &RuntimeSetup, out: &mut impl Write) -> Result<()> {
    let skills = session_runtime::setup::load_skills(setup);
    let config = session_runtime::setup::load_config(setup)?.config;
    let home = setup.home.as_ref().map(|h| h.to_string_lossy().into_owned());
    let agents = session_runtime::agents::configured_agents(&config, home.as_deref())?;
    let agent = session_runtime::agents::default_agent(&config, &agents)?;
    let rules = agents.get(&agent).map(|a| a.ruleset.clone()).unwrap_or_default();
    if skills.skills().is_empty() {
        writeln!(out, "no skills")?;
    }
    for loaded in skills.skills() {
        let mut notes = vec![match loaded.scope {
            SkillScope::User => "yours".to_owned(),
            SkillScope::Project => "project".to_owned(),
        }];
        if loaded.slash {
            notes.push(format!("/{}", loaded.skill.name));
        }
        match evaluate("skill", &loaded.skill.name, &[rules.as_slice()]) {
            Action::Allow => {}
            Action::Ask => notes.push(format!("asks for {agent}")),
            Action::Deny => notes.push(format!("denied for {agent}")),
        }
        writeln!(out, "{} ({})", loaded.skill.name, notes.join(", "))?;
        writeln!(out, "  {}", loaded.skill.description)?;
        writeln!(out, "  {}", loaded.skill.location.display())?;
    }
    if !skills.problems().is_empty() {
        writeln!(out, "problems:")?;
        for problem in skills.problems() {
            writeln!(out, "  {problem}")?;
        }
    }
    Ok(())
}
