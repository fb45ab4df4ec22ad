//! `question`: the model asks the user questions with suggested answers and reads back the
//! labels picked (or the text typed). Registered only by a program with someone to answer: the
//! tool waits on a [`QuestionAsker`] until the user replies or dismisses.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use session_core::SessionId;
use session_core::permission::{QuestionRejectedError, ToolCallRef};

use super::object;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::{ToolSuccess, TypedTool};

/// The tool's name, which is also the permission rule that turns it off (`question: deny`).
pub const QUESTION_TOOL: &str = "question";

const DESCRIPTION: &str = "Use this tool when you need to ask the user questions during execution. This allows \
you to:
1. Gather user preferences or requirements
2. Clarify ambiguous instructions
3. Get decisions on implementation choices as you work
4. Offer choices to the user about what direction to take.
Usage notes:
- A \"Type your own answer\" option is added automatically; don't include \"Other\" or catch-all options
- Answers are returned as arrays of labels; set `multiple: true` to allow selecting more than one
- If you recommend a specific option, make that the first option in the list and add \"(Recommended)\" at the \
end of the label";

/// One suggested answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionOption {
    /// Display text (1-5 words, concise)
    pub label: String,
    /// Explanation of choice
    pub description: String,
}

/// One question as the model asks it (OpenCode's `QuestionPrompt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionPrompt {
    /// Complete question
    pub question: String,
    /// Very short label (max 30 chars)
    pub header: String,
    /// Available choices
    #[schemars(transform = items_without_description)]
    pub options: Vec<QuestionOption>,
    /// Allow selecting multiple choices
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub multiple: Option<bool>,
}

impl QuestionPrompt {
    /// True when more than one option may be picked.
    pub fn is_multiple(&self) -> bool {
        self.multiple == Some(true)
    }
}

/// The picked labels (or typed text) of one question; empty when left unanswered.
pub type QuestionAnswer = Vec<String>;

/// What the tool hands its asker: the questions of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionAsk {
    /// The asking session.
    pub session_id: SessionId,
    /// The questions, in order.
    pub questions: Vec<QuestionPrompt>,
    /// The call asking.
    pub tool: Option<ToolCallRef>,
}

/// Whoever answers the questions of `question` calls (the runtime's pending questions, which
/// clients answer through its API). Dropping the returned future withdraws the question.
#[async_trait]
pub trait QuestionAsker: Send + Sync {
    /// Waits for the answers, one per question in order, or the user's dismissal.
    async fn ask(&self, ask: QuestionAsk) -> Result<Vec<QuestionAnswer>, QuestionRejectedError>;
}

// The tool's arguments (no doc comment: it would become the schema's description, which
// OpenCode's has none of).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct QuestionArgs {
    /// Questions to ask
    #[schemars(transform = items_without_description)]
    questions: Vec<QuestionPrompt>,
}

/// OpenCode 1.18.34 offers the question and option objects without descriptions of their own;
/// the types' doc comments are for this crate's readers.
fn items_without_description(schema: &mut schemars::Schema) {
    if let Some(items) = schema.get_mut("items").and_then(Value::as_object_mut) {
        items.remove("description");
    }
}

/// The `question` tool, asking through its [`QuestionAsker`].
#[derive(Clone)]
pub struct QuestionTool {
    asker: Arc<dyn QuestionAsker>,
}

impl std::fmt::Debug for QuestionTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuestionTool").finish_non_exhaustive()
    }
}

impl QuestionTool {
    /// The tool, with `asker` answering its questions.
    pub fn new(asker: Arc<dyn QuestionAsker>) -> Self {
        Self { asker }
    }
}

/// The text the model reads, in OpenCode's words: each question with its answers joined by
/// `", "`, or `Unanswered`.
pub fn question_output(questions: &[QuestionPrompt], answers: &[QuestionAnswer]) -> String {
    let pairs: Vec<String> = questions
        .iter()
        .enumerate()
        .map(|(index, prompt)| {
            let answer = match answers.get(index) {
                Some(answer) if !answer.is_empty() => answer.join(", "),
                _ => "Unanswered".to_owned(),
            };
            format!("\"{}\"=\"{answer}\"", prompt.question)
        })
        .collect();
    format!(
        "User has answered your questions: {}. You can now continue with the user's answers in mind.",
        pairs.join(", ")
    )
}

/// Questions one call may ask: a dialog, not a form (OpenCode sets no bound; a hostile model
/// could otherwise make the user's dialog and the pending list arbitrarily large).
pub const MAX_QUESTIONS: usize = 16;

/// Options one question may offer.
pub const MAX_OPTIONS: usize = 64;

/// Characters of one question, header, label or description.
pub const MAX_TEXT_CHARS: usize = 4_000;

/// Why `questions` is larger than a dialog shows, in the words the model reads.
fn oversized(questions: &[QuestionPrompt]) -> Option<String> {
    if questions.len() > MAX_QUESTIONS {
        return Some(format!("at most {MAX_QUESTIONS} questions per call, not {}", questions.len()));
    }
    for (index, question) in questions.iter().enumerate() {
        if question.options.len() > MAX_OPTIONS {
            return Some(format!(
                "questions[{index}]: at most {MAX_OPTIONS} options, not {}",
                question.options.len()
            ));
        }
        let texts = [&question.question, &question.header]
            .into_iter()
            .chain(question.options.iter().flat_map(|option| [&option.label, &option.description]));
        if texts.into_iter().any(|text| text.chars().count() > MAX_TEXT_CHARS) {
            return Some(format!("questions[{index}]: each text at most {MAX_TEXT_CHARS} characters"));
        }
    }
    None
}

/// The part's title: `Asked 1 question`, `Asked 2 questions`.
pub fn question_title(count: usize) -> String {
    format!("Asked {count} question{}", if count > 1 { "s" } else { "" })
}

#[async_trait]
impl TypedTool for QuestionTool {
    const NAME: &'static str = QUESTION_TOOL;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = QuestionArgs;

    // OpenCode 1.18.34's tool asks no permission: the `question` rule only turns it off.
    async fn run(&self, args: QuestionArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        if let Some(details) = oversized(&args.questions) {
            return Err(ToolError::InvalidArguments { tool: QUESTION_TOOL.to_owned(), details });
        }
        let ask = QuestionAsk {
            session_id: ctx.session_id().clone(),
            questions: args.questions.clone(),
            tool: Some(ToolCallRef {
                message_id: ctx.message_id().clone(),
                call_id: ctx.call_id().to_owned(),
            }),
        };
        // An abort drops the ask, which withdraws the question (the asker tells its clients).
        let answers = tokio::select! {
            answers = self.asker.ask(ask) => answers?,
            () = ctx.abort().cancelled() => return Err(ToolError::Aborted),
        };
        let value = Value::Array(
            answers
                .iter()
                .map(|answer| Value::Array(answer.iter().cloned().map(Value::String).collect()))
                .collect(),
        );
        Ok(ToolSuccess::new(
            question_title(args.questions.len()),
            question_output(&args.questions, &answers),
            object([("answers", value)]),
        ))
    }
}

#[cfg(test)]
mod tests;
