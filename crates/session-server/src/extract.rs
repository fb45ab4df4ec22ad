//! What every handler reads from a request besides its body: the `directory` query the SDK
//! adds (and the v2 `location[...]` one), the query rejection as OpenCode's `BadRequest`, ids
//! parsed from the path, and the v2 answer's `{location, data}` wrapper.

use std::path::Path;

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use serde::{Deserialize, Serialize};
use session_core::Identifier;

use crate::error::ServerError;
use crate::session_info::project_id;

/// The query every route accepts (the SDK adds `directory` to its requests).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct DirectoryQuery {
    /// The project directory the client works in; this server serves one project.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so that the SDK's requests parse; this server serves one project"
    )]
    directory: Option<String>,
}

/// The query of the v2 routes: `location[directory]` and `location[workspace]`, or neither.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LocationQuery {
    #[serde(default, rename = "location[directory]")]
    #[expect(dead_code, reason = "accepted so that v2 requests parse; this server serves one project")]
    directory: Option<String>,
    #[serde(default, rename = "location[workspace]")]
    #[expect(dead_code, reason = "accepted so that v2 requests parse; this server has no workspaces")]
    workspace: Option<String>,
}

/// The query, or the rejection as a `BadRequest` naming the field.
pub(crate) fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ServerError> {
    query.map(|Query(q)| q).map_err(|rejection| ServerError::query(rejection.body_text()))
}

/// `value` parsed as an id of type `T`, or a `BadRequest` naming the path parameter `name`.
pub(crate) fn parse_id<T: Identifier>(value: &str, name: &str) -> Result<T, ServerError> {
    T::parse(value).map_err(|error| ServerError::param(format!("{name}: {error}")))
}

/// The v2 `LocationInfo`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Location {
    directory: String,
    project: LocationProject,
}

#[derive(Debug, Clone, Serialize)]
struct LocationProject {
    id: String,
    directory: String,
}

impl Location {
    /// Where this server works: `worktree`.
    pub(crate) fn of(worktree: &Path) -> Self {
        let directory = worktree.to_string_lossy().into_owned();
        Self {
            project: LocationProject { id: project_id(&directory), directory: directory.clone() },
            directory,
        }
    }
}

/// A v2 answer: where it applies, and the data.
#[derive(Debug, Serialize)]
pub(crate) struct Located<T> {
    location: Location,
    data: T,
}

impl<T> Located<T> {
    /// `data` at the location of a server working in `worktree`.
    pub(crate) fn new(worktree: &Path, data: T) -> Self {
        Self { location: Location::of(worktree), data }
    }
}
