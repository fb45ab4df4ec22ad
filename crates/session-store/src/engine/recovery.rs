//! Closing what a dead run left open (SPEC 8's cleanup, applied from outside): open tool parts
//! become interrupted errors, open text and reasoning end, unfinished assistant messages
//! complete with the aborted error. The rules per row are `rows::close_part` and
//! `rows::close_message`; this module applies them to one session's stored rows.

use session_core::SessionId;

use crate::backend::{Backend, message_columns, part_columns, query};
use crate::error::{StoreError, StoreResult};
use crate::model::RecoveryReport;
use crate::rows::{self, DecodedPart};

/// Closes a dead run's open parts and messages, inside `conn`'s transaction.
pub(super) async fn recover_rows<DB: Backend>(
    conn: &mut DB::Connection,
    session_id: &SessionId,
    now: u64,
) -> StoreResult<RecoveryReport> {
    let sql = DB::sql();
    let mut report = RecoveryReport::default();
    let parts = query::<DB>(sql.open_parts)
        .bind(session_id.as_str())
        .fetch_all(&mut *conn)
        .await
        .map_err(StoreError::from_db)?;
    for row in &parts {
        let stored = part_columns::<DB>(row)?;
        let data = match rows::decode_part(&stored) {
            DecodedPart::Known(mut part) => {
                if rows::close_part(&mut part, now) {
                    report.parts += 1;
                }
                rows::encode_part(&part)?.data
            }
            DecodedPart::Unknown(_) | DecodedPart::Bad(_) => {
                tracing::warn!(part_id = %stored.id, "an open part is unreadable; kept as it is");
                stored.data.to_owned()
            }
        };
        query::<DB>(sql.close_part)
            .bind(stored.id)
            .bind(&data)
            .execute(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
    }
    let messages = query::<DB>(sql.open_messages)
        .bind(session_id.as_str())
        .fetch_all(&mut *conn)
        .await
        .map_err(StoreError::from_db)?;
    for row in &messages {
        let stored = message_columns::<DB>(row)?;
        let data = match rows::decode_message(&stored) {
            Ok(mut message) => {
                if rows::close_message(&mut message, now) {
                    report.messages += 1;
                }
                rows::encode_message(&message)?.data
            }
            Err(_) => {
                tracing::warn!(message_id = %stored.id, "an open message is unreadable; kept as it is");
                stored.data.to_owned()
            }
        };
        query::<DB>(sql.close_message)
            .bind(stored.id)
            .bind(&data)
            .execute(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
    }
    Ok(report)
}
