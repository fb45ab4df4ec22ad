//! Whole sessions moved as one: forks (a copy with new ids under the original), and the
//! versioned export document, written and read back.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use session_core::{Message, MessageId, PartId, PartKind, SessionId};

use super::Engine;
use super::history::{Placed, load};
use super::sessions::{insert_session, read_session};
use crate::backend::{Backend, query};
use crate::bulk::{Plan, write_each, write_plan};
use crate::document::{DOCUMENT_VERSION, DocumentMessage, DocumentPart, SessionDocument};
use crate::error::{EntityKind, StoreError, StoreResult};
use crate::model::{RawPart, Session, SessionTime, SessionTokens};
use crate::rows::{self, RowWrite};
use crate::usage::{Usage, recount};
use crate::util::forked_title;

impl<DB: Backend> Engine<DB> {
    pub(crate) async fn fork_session(&self, id: &SessionId, at: Option<&MessageId>) -> StoreResult<Session> {
        self.flush_session(Some(id)).await?;
        let now = self.now();
        let mut tx = self.begin_write().await?;
        let source = read_session::<DB>(&mut tx, id).await?;
        let (loaded, _) = load::<DB>(&mut *tx, id, None).await?;
        if let Some(at) = at
            && !loaded.messages.iter().any(|m| m.id() == at)
        {
            return Err(StoreError::not_found(EntityKind::Message, at));
        }
        // As OpenCode forks: a new slug, the source's folder, no agent or model until a prompt
        // names them, and totals that the copied step-finish parts add up as they are written.
        let mut fork = Session {
            id: self.ids.next(now),
            slug: self.ids.slug(),
            project_id: source.project_id.clone(),
            directory: source.directory.clone(),
            path: source.path.clone(),
            parent_id: Some(source.id.clone()),
            title: forked_title(&source.title),
            version: source.version.clone(),
            summary: None,
            cost: rust_decimal::Decimal::ZERO,
            tokens: SessionTokens::default(),
            agent: None,
            model: None,
            revert: None,
            time: SessionTime { created: now, updated: now, compacting: None, archived: None },
            // A fork may do what its source may.
            permission: source.permission.clone(),
            extra: serde_json::Map::new(),
        };
        insert_session::<DB>(&mut tx, &fork).await?;
        let mut map: HashMap<MessageId, MessageId> = HashMap::new();
        let mut rows = Vec::new();
        for (message, parts) in loaded.messages.into_iter().zip(loaded.parts) {
            if at.is_some_and(|at| message.id() >= at) {
                break;
            }
            let new_id: MessageId = self.ids.next(now);
            map.insert(message.id().clone(), new_id.clone());
            let copy = match message {
                Message::User(mut m) => {
                    m.id = new_id.clone();
                    m.session_id = fork.id.clone();
                    Message::User(m)
                }
                Message::Assistant(mut m) => {
                    m.id = new_id.clone();
                    m.session_id = fork.id.clone();
                    if let Some(parent) = map.get(&m.parent_id) {
                        m.parent_id = parent.clone();
                    }
                    Message::Assistant(m)
                }
            };
            rows.push(RowWrite::Message(rows::encode_message(&copy)?, now));
            for placed in parts {
                let part_id: PartId = self.ids.next(now);
                match placed {
                    Placed::Known(mut part) => {
                        part.id = part_id;
                        part.session_id = fork.id.clone();
                        part.message_id = new_id.clone();
                        if let PartKind::Compaction(compaction) = &mut part.kind
                            && let Some(tail) = compaction.tail_start_id.as_ref().and_then(|t| map.get(t))
                        {
                            compaction.tail_start_id = Some(tail.clone());
                        }
                        rows.push(RowWrite::Part(rows::encode_part(&part)?));
                    }
                    Placed::Unknown(mut raw) => {
                        if let Value::Object(object) = &mut raw.json {
                            object.insert("id".to_owned(), Value::String(part_id.to_string()));
                            object.insert("sessionID".to_owned(), Value::String(fork.id.to_string()));
                            object.insert("messageID".to_owned(), Value::String(new_id.to_string()));
                        }
                        raw.id = part_id;
                        raw.session_id = fork.id.clone();
                        raw.message_id = new_id.clone();
                        rows.push(RowWrite::Part(rows::encode_raw_part(&raw)?));
                    }
                }
            }
        }
        match Plan::of(&[rows.as_slice()]) {
            Some(plan) => write_plan::<DB>(&mut tx, &plan).await?,
            None => write_each::<DB>(&mut tx, &rows).await?,
        }
        let totals = read_session::<DB>(&mut tx, &fork.id).await?;
        Usage::of_session(&totals).set_on(&mut fork);
        tx.commit().await.map_err(StoreError::from_db)?;
        Ok(fork)
    }

    pub(crate) async fn export_session(&self, id: &SessionId) -> StoreResult<SessionDocument> {
        self.flush_session(Some(id)).await?;
        let mut tx = self.begin_read().await?;
        let info = read_session::<DB>(&mut tx, id).await?;
        let (loaded, _) = load::<DB>(&mut *tx, id, None).await?;
        tx.commit().await.map_err(StoreError::from_db)?;
        let messages = loaded
            .messages
            .into_iter()
            .zip(loaded.parts)
            .map(|(info, parts)| DocumentMessage {
                info,
                parts: parts
                    .into_iter()
                    .map(|placed| match placed {
                        Placed::Known(part) => DocumentPart::from(part),
                        Placed::Unknown(raw) => DocumentPart::from(raw),
                    })
                    .collect(),
            })
            .collect();
        Ok(SessionDocument { version: DOCUMENT_VERSION, info, messages })
    }

    pub(crate) async fn import_session(&self, document: &SessionDocument) -> StoreResult<Session> {
        if document.version > DOCUMENT_VERSION {
            return Err(StoreError::UnsupportedVersion {
                found: document.version,
                supported: DOCUMENT_VERSION,
            });
        }
        if document.version == 0 {
            return Err(StoreError::InvalidDocument("version 0 does not exist".to_owned()));
        }
        let mut session = document.info.clone();
        let rows = document_rows(document)?;
        let mut tx = self.begin_write().await?;
        insert_session::<DB>(&mut tx, &session).await?;
        let sql = DB::sql();
        for row in &rows {
            match row {
                RowWrite::Message(m, _) => {
                    query::<DB>(sql.insert_message)
                        .bind_message(m)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| StoreError::on_write(e, EntityKind::Message, &m.id))?;
                }
                RowWrite::Part(p) => {
                    query::<DB>(sql.insert_part)
                        .bind_part(p)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| StoreError::on_write(e, EntityKind::Part, &p.id))?;
                }
            }
        }
        // The totals are the sums of the parts stored, whatever the document's record says.
        recount::<DB>(&mut tx, &session.id).await?.set_on(&mut session);
        if session.slug.is_empty() {
            session.slug = crate::util::slug_of_id(session.id.as_str());
        }
        tx.commit().await.map_err(StoreError::from_db)?;
        Ok(session)
    }
}

/// A document's messages and parts as rows, checked: each belongs to the document's session
/// (a part to its message) and appears once.
fn document_rows(document: &SessionDocument) -> StoreResult<Vec<RowWrite>> {
    let session = &document.info;
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    for message in &document.messages {
        let message_id = message.info.id();
        if message.info.session_id() != &session.id {
            return Err(StoreError::InvalidDocument(format!(
                "message {message_id} belongs to session {}, not {}",
                message.info.session_id(),
                session.id
            )));
        }
        if !seen.insert(message_id.to_string()) {
            return Err(StoreError::InvalidDocument(format!("message {message_id} appears twice")));
        }
        rows.push(RowWrite::Message(rows::encode_message(&message.info)?, session.time.updated));
        for part in &message.parts {
            let row = match part {
                DocumentPart::Known(part) => {
                    if &part.message_id != message_id || part.session_id != session.id {
                        return Err(StoreError::InvalidDocument(format!(
                            "part {} does not belong to message {message_id}",
                            part.id
                        )));
                    }
                    rows::encode_part(part)?
                }
                DocumentPart::Raw(json) => rows::encode_raw_part(&raw_part(json, &session.id, message_id)?)?,
            };
            if !seen.insert(row.id.clone()) {
                return Err(StoreError::InvalidDocument(format!("part {} appears twice", row.id)));
            }
            rows.push(RowWrite::Part(row));
        }
    }
    Ok(rows)
}

/// A raw document part, checked: it needs an `id` and a `type`, and belongs to its message.
fn raw_part(json: &Value, session_id: &SessionId, message_id: &MessageId) -> StoreResult<RawPart> {
    let field = |name: &str| json.get(name).and_then(Value::as_str);
    let (Some(id), Some(part_type)) = (field("id"), field("type")) else {
        return Err(StoreError::InvalidDocument(format!("a part of message {message_id} has no id or type")));
    };
    if field("sessionID").is_some_and(|s| s != session_id.as_str())
        || field("messageID").is_some_and(|m| m != message_id.as_str())
    {
        return Err(StoreError::InvalidDocument(format!(
            "part {id} does not belong to message {message_id}"
        )));
    }
    Ok(RawPart {
        id: PartId::new_unchecked(id),
        session_id: session_id.clone(),
        message_id: message_id.clone(),
        part_type: part_type.to_owned(),
        json: json.clone(),
    })
}
