//! A session's totals (`cost`, `tokens`): the sums of its step-finish parts, kept in the
//! session row's columns by the transaction that writes or removes such a part, as OpenCode
//! keeps them (it adds a step-finish part's cost and tokens when the part is written, takes
//! back the part's earlier values when it is written again, and subtracts a removed part's).

use std::str::FromStr;

use rust_decimal::Decimal;
use session_core::SessionId;

use crate::backend::{Backend, part_columns, query};
use crate::error::{StoreError, StoreResult};
use crate::model::SessionTokens;
use crate::rows::{self, DecodedPart, PartRow};

/// The totals type lives in the model (rows read it too); its sums are kept here.
pub(crate) use crate::model::Usage;

/// A money column's text as a decimal: SQLite's first totals may be reals written with an
/// exponent (`1.0e-05`); an unreadable one reads as zero, which the next write replaces.
pub(crate) fn parse_money(text: &str) -> Decimal {
    let text = text.trim();
    Decimal::from_str(text).or_else(|_| Decimal::from_scientific(text)).unwrap_or_default()
}

/// A token column as a count (a negative one as zero).
pub(crate) fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A count as a column value.
fn column(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The session's stored totals, locked for the transaction's update where the backend locks
/// rows; none when the session does not exist.
async fn read_totals<DB: Backend>(conn: &mut DB::Connection, session: &str) -> StoreResult<Option<Usage>> {
    let row = query::<DB>(DB::sql().select_usage)
        .bind(session)
        .fetch_optional(&mut *conn)
        .await
        .map_err(StoreError::from_db)?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(Usage {
        cost: parse_money(DB::text(&row, 0)?),
        tokens: SessionTokens {
            input: count(DB::integer(&row, 1)?),
            output: count(DB::integer(&row, 2)?),
            reasoning: count(DB::integer(&row, 3)?),
            cache: session_core::CacheTokens {
                read: count(DB::integer(&row, 4)?),
                write: count(DB::integer(&row, 5)?),
            },
        },
    }))
}

/// Writes the session's totals.
async fn write_totals<DB: Backend>(
    conn: &mut DB::Connection,
    session: &str,
    usage: &Usage,
) -> StoreResult<()> {
    let t = &usage.tokens;
    let cost = usage.cost.to_string();
    query::<DB>(DB::sql().set_usage)
        .bind(session)
        .bind(&cost)
        .bind(column(t.input))
        .bind(column(t.output))
        .bind(column(t.reasoning))
        .bind(column(t.cache.read))
        .bind(column(t.cache.write))
        .execute(&mut *conn)
        .await
        .map_err(StoreError::from_db)?;
    Ok(())
}

/// Before `parts` are upserted in the same transaction: moves each session's totals by the
/// step-finish parts among them, adding each one's usage and taking back what the row it
/// replaces added. A part of a session that does not exist moves nothing (its write fails).
pub(crate) async fn count_steps<DB: Backend>(
    conn: &mut DB::Connection,
    parts: &[&PartRow],
) -> StoreResult<()> {
    for row in parts {
        let Some(usage) = &row.usage else { continue };
        let before = query::<DB>(DB::sql().select_part)
            .bind(row.id.as_str())
            .fetch_optional(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
        let replaced = match &before {
            Some(before) => match rows::decode_part(&part_columns::<DB>(before)?) {
                // A row of another session is refused by the upsert's guard.
                DecodedPart::Known(part) if part.session_id.as_str() == row.session_id => {
                    Usage::of_part(&part)
                }
                _ => None,
            },
            None => None,
        }
        .unwrap_or_default();
        if replaced == *usage {
            continue;
        }
        let Some(totals) = read_totals::<DB>(conn, &row.session_id).await? else { continue };
        write_totals::<DB>(conn, &row.session_id, &totals.moved(usage, &replaced)).await?;
    }
    Ok(())
}

/// Sets the session's totals to the sums of the step-finish parts it has now (after parts
/// were removed or a whole session written), and returns them.
pub(crate) async fn recount<DB: Backend>(
    conn: &mut DB::Connection,
    session: &SessionId,
) -> StoreResult<Usage> {
    let rows = query::<DB>(DB::sql().step_finish_parts)
        .bind(session.as_str())
        .fetch_all(&mut *conn)
        .await
        .map_err(StoreError::from_db)?;
    let mut totals = Usage::default();
    for row in &rows {
        if let DecodedPart::Known(part) = rows::decode_part(&part_columns::<DB>(row)?)
            && let Some(usage) = Usage::of_part(&part)
        {
            totals = totals.moved(&usage, &Usage::default());
        }
    }
    write_totals::<DB>(conn, session.as_str(), &totals).await?;
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(cost: i64, input: u64) -> Usage {
        Usage {
            cost: Decimal::new(cost, 4),
            tokens: SessionTokens { input, output: 1, ..SessionTokens::default() },
        }
    }

    #[test]
    fn totals_move_exactly_and_counts_stop_at_zero() {
        let total = usage(105, 10).moved(&usage(2, 5), &usage(7, 20));
        assert_eq!(total.cost, Decimal::new(100, 4));
        assert_eq!(total.tokens.input, 0);
        assert_eq!(total.tokens.output, 1);
    }

    #[test]
    fn money_columns_read_decimal_and_exponent_text() {
        assert_eq!(parse_money("0.0105"), Decimal::new(105, 4));
        assert_eq!(parse_money("1.0e-05"), Decimal::new(1, 5));
        assert_eq!(parse_money("0.0"), Decimal::ZERO);
        assert_eq!(parse_money("junk"), Decimal::ZERO);
    }
}
