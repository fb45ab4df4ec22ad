//! The operations of the project served and where it is.

use serde_json::json;

use super::*;

/// `GET /project`.
pub(crate) fn list() -> Operation {
    read("project.list", "The one project this server serves", vec![], array(reference("Project")), false)
}

/// `GET /project/current`.
pub(crate) fn current() -> Operation {
    read("project.current", "The project this server serves", vec![], reference("Project"), false)
}

/// `GET /project/{projectID}/directories`.
pub(crate) fn directories() -> Operation {
    read(
        "project.directories",
        "The project's folder",
        vec![path_param("projectID")],
        array(json!({"type": "object", "required": ["directory"]})),
        true,
    )
}

/// `GET /vcs`.
pub(crate) fn vcs() -> Operation {
    read(
        "vcs.get",
        "The branch HEAD names",
        vec![],
        json!({"type": "object", "properties": {"branch": string()}}),
        false,
    )
}

/// `GET /api/location`.
pub(crate) fn location() -> Operation {
    read("v2.location.get", "Where this server works", super::location(), reference("LocationInfo"), false)
}
