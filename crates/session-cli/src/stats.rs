//! `session stats`: sessions, tokens and cost per model and per day (UTC), from the store.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use anyhow::Result;
use rust_decimal::Decimal;
use session_core::{Message, PartKind, SessionId, calendar::utc_date};
use session_store::{ListSessions, Store};

use crate::terminal::clean;

/// What one row of the stats adds up.
#[derive(Debug, Clone, Default, PartialEq)]
struct Row {
    sessions: BTreeSet<SessionId>,
    messages: u64,
    input: u64,
    output: u64,
    cost: Decimal,
}

impl Row {
    fn add(&mut self, session: &SessionId, input: u64, output: u64, cost: Decimal) {
        self.sessions.insert(session.clone());
        self.messages += 1;
        self.input += input;
        self.output += output;
        self.cost += cost;
    }

    fn line(&self, label: &str) -> String {
        format!(
            "  {label}\t{} sessions\t{} messages\t{} in\t{} out\t${}",
            self.sessions.len(),
            self.messages,
            self.input,
            self.output,
            self.cost.round_dp(6).normalize()
        )
    }
}

/// Sums every stored session's assistant messages: the totals, then per model, then per day.
pub async fn stats(store: &dyn Store, out: &mut impl Write) -> Result<()> {
    let mut total = Row::default();
    let mut sessions = 0usize;
    let mut by_model: BTreeMap<String, Row> = BTreeMap::new();
    let mut by_day: BTreeMap<String, Row> = BTreeMap::new();
    let mut query = ListSessions { limit: 100, ..ListSessions::default() };
    loop {
        let page = store.list_sessions(&query).await?;
        for session in &page.sessions {
            sessions += 1;
            let history = store.load_history(&session.id).await?;
            for message in &history.messages {
                let Message::Assistant(assistant) = &message.info else { continue };
                // Every step's tokens (the message's own are its last step's).
                let (mut input, mut output) = (0, 0);
                for part in &message.parts {
                    if let PartKind::StepFinish(step) = &part.kind {
                        input += step.tokens.input + step.tokens.cache.read + step.tokens.cache.write;
                        output += step.tokens.output + step.tokens.reasoning;
                    }
                }
                let model = format!("{}/{}", assistant.provider_id, assistant.model_id);
                let day = utc_date(assistant.time.created);
                for row in [&mut total, by_model.entry(model).or_default(), by_day.entry(day).or_default()] {
                    row.add(&session.id, input, output, assistant.cost);
                }
            }
        }
        match page.next {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    writeln!(
        out,
        "{sessions} sessions, {} assistant messages, {} tokens in, {} out, ${}",
        total.messages,
        total.input,
        total.output,
        total.cost.round_dp(6).normalize()
    )?;
    writeln!(out, "by model:")?;
    for (model, row) in &by_model {
        writeln!(out, "{}", row.line(&clean(model)))?;
    }
    writeln!(out, "by day (UTC):")?;
    for (day, row) in &by_day {
        writeln!(out, "{}", row.line(day))?;
    }
    Ok(())
}
