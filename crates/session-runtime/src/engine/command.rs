//! Commands (OpenCode's `command/index.ts`): a named prompt template from `command.<name>` or
//! a markdown file, with `$ARGUMENTS` (every argument) and `$1`, `$2`, ... (one each, the
//! highest taking the rest) filled in; arguments given to a template without placeholders are
//! appended to it. A command may name the agent and model to run with, and `subtask` runs it in
//! a child session of the session.

use session_core::{AssistantMessage, ModelRef, SessionId};
use session_store::NewSession;

use super::bus::BusEvent;
use super::error::RuntimeError;
use super::inputs::{PromptInput, parse_model_ref};
use super::runtime::Runtime;
use crate::config::CommandConfig;

/// A command to run: its name and arguments, and the caller's agent and model (a command's own
/// beat them, as in OpenCode).
#[derive(Debug, Clone, Default)]
pub struct CommandInput {
    /// The command's name.
    pub command: String,
    /// The arguments as one string (split like a shell would for `$1`...).
    pub arguments: String,
    /// The caller's agent, used when the command names none.
    pub agent: Option<String>,
    /// The caller's model, used when the command names none.
    pub model: Option<ModelRef>,
    /// The caller's model variant.
    pub variant: Option<String>,
}

/// The template with its placeholders filled from `arguments`.
pub fn expand_template(template: &str, arguments: &str) -> String {
    // Quoted arguments stay one; unbalanced quotes fall back to splitting on whitespace.
    let args =
        shlex::split(arguments).unwrap_or_else(|| arguments.split_whitespace().map(str::to_owned).collect());
    let highest = placeholders(template).into_iter().max().unwrap_or(0);
    let mut text = String::with_capacity(template.len() + arguments.len());
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        text.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(index @ 1..) = after[..digits].parse::<usize>() {
            let value = if index == highest {
                args.get(index - 1..).map(|tail| tail.join(" ")).unwrap_or_default()
            } else {
                args.get(index - 1).cloned().unwrap_or_default()
            };
            text.push_str(&value);
            rest = &after[digits..];
        } else if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            text.push_str(arguments);
            rest = tail;
        } else {
            text.push('$');
            rest = after;
        }
    }
    text.push_str(rest);
    if highest == 0 && !template.contains("$ARGUMENTS") && !arguments.trim().is_empty() {
        text.push_str("\n\n");
        text.push_str(arguments.trim());
    }
    text.trim().to_owned()
}

/// The numbers of the `$N` placeholders of `template`.
fn placeholders(template: &str) -> Vec<usize> {
    template
        .split('$')
        .skip(1)
        .filter_map(|after| {
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok().filter(|n| *n > 0)
        })
        .collect()
}

impl Runtime {
    /// The configured commands by name.
    pub fn commands(&self) -> &indexmap::IndexMap<String, CommandConfig> {
        &self.settings.commands
    }

    /// The skills of the runtime (the system prompt's, the `skill` tool's, `/skills`').
    pub fn skills(&self) -> &crate::config::SkillSet {
        &self.settings.skills
    }

    /// The prompt a command makes: its template filled in, its agent and model (else the
    /// caller's). A skill marked as a slash command answers to its name when no configured
    /// command has it.
    pub fn command_prompt(&self, input: &CommandInput) -> Result<PromptInput, RuntimeError> {
        let Some(command) = self.settings.commands.get(&input.command) else {
            let skill = self.settings.skills.commands().find(|skill| skill.skill.name == input.command);
            let Some(skill) = skill else {
                let skills = self.settings.skills.commands().map(|skill| skill.skill.name.clone());
                return Err(RuntimeError::CommandNotFound {
                    name: input.command.clone(),
                    available: self
                        .settings
                        .commands
                        .keys()
                        .cloned()
                        .chain(skills)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            return Ok(PromptInput {
                text: expand_template(&skill.command_template(), &input.arguments),
                agent: input.agent.clone(),
                model: input.model.clone(),
                variant: input.variant.clone(),
                ..PromptInput::default()
            });
        };
        let model = match &command.model {
            Some(reference) => Some(parse_model_ref(reference).ok_or_else(|| {
                RuntimeError::BadCommandModel { name: input.command.clone(), model: reference.clone() }
            })?),
            None => input.model.clone(),
        };
        Ok(PromptInput {
            text: expand_template(&command.template, &input.arguments),
            agent: command.agent.clone().or_else(|| input.agent.clone()),
            model,
            variant: input.variant.clone(),
            ..PromptInput::default()
        })
    }

    /// Runs a command in `session_id`: as a prompt there, or with `subtask` in a new child
    /// session of it (returned with the answer).
    pub async fn command(
        &self,
        session_id: &SessionId,
        input: &CommandInput,
    ) -> Result<(SessionId, AssistantMessage), RuntimeError> {
        let prompt = self.command_prompt(input)?;
        let subtask = self.settings.commands.get(&input.command).and_then(|c| c.subtask) == Some(true);
        if !subtask {
            return Ok((session_id.clone(), self.prompt(session_id, prompt).await?));
        }
        let parent = self.store.get_session(session_id).await?;
        let child = self
            .store
            .create_session(NewSession {
                id: None,
                project_id: parent.project_id.clone(),
                directory: parent.directory.clone(),
                title: Some(format!("/{} (subtask)", input.command)),
                parent_id: Some(session_id.clone()),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                // A child may do no more than the session that started it.
                permission: parent.permission.clone(),
                // Its folder is its parent's; its prompt names its agent and model.
                path: parent.path.clone(),
                agent: None,
                model: None,
            })
            .await?;
        self.bus.publish(BusEvent::SessionCreated { info: Box::new(child.clone()) });
        let answer = self.prompt(&child.id, prompt).await?;
        Ok((child.id, answer))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn arguments_fill_the_placeholders() {
        assert_eq!(
            expand_template("Review $ARGUMENTS now.", "src/a.rs src/b.rs"),
            "Review src/a.rs src/b.rs now."
        );
        assert_eq!(
            expand_template("Move $1 to $2.", "a.rs \"new dir/b.rs\" extra"),
            "Move a.rs to new dir/b.rs extra."
        );
        assert_eq!(expand_template("From $1 and $1 again; $3", "x y z w"), "From x and x again; z w");
        assert_eq!(expand_template("Run the tests.", "--fast"), "Run the tests.\n\n--fast");
        assert_eq!(expand_template("Costs $5 or $ARGS.", ""), "Costs  or $ARGS.");
        assert_eq!(expand_template("Price: $ and $0", "a"), "Price: $ and $0\n\na");
    }
}
