//! The skills the runtime loaded: `GET /skill` in OpenCode 1.18's shape and `GET /api/skill`
//! in the v2 one (with `slash`).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Serialize;
use session_runtime::config::LoadedSkill;

use axum::response::Response;

use super::{Shared, json_response};
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, Located, LocationQuery, query};

/// OpenCode's skill (`GET /skill`), and the v2 `SkillV2Info` with `slash`.
#[derive(Debug, Serialize)]
pub(crate) struct SkillInfo<'a> {
    name: &'a str,
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    slash: Option<bool>,
    location: String,
    content: &'a str,
}

impl<'a> SkillInfo<'a> {
    fn new(skill: &'a LoadedSkill, v2: bool) -> Self {
        Self {
            name: &skill.skill.name,
            description: &skill.skill.description,
            slash: v2.then_some(skill.slash),
            location: skill.skill.location.display().to_string(),
            content: &skill.skill.content,
        }
    }
}

/// `GET /skill`: the skills the runtime loaded, by name.
pub(crate) async fn list(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Response, ServerError> {
    query(q)?;
    let body: Vec<SkillInfo<'_>> =
        state.runtime.skills().skills().iter().map(|skill| SkillInfo::new(skill, false)).collect();
    json_response(&body)
}

/// `GET /api/skill`: the skills the runtime loaded, by name.
pub(crate) async fn list_v2(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Response, ServerError> {
    query(q)?;
    let data: Vec<SkillInfo<'_>> =
        state.runtime.skills().skills().iter().map(|skill| SkillInfo::new(skill, true)).collect();
    json_response(&Located::new(state.runtime.worktree(), data))
}
