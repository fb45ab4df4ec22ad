//! The route table: every method and path the server answers, with the handler that answers
//! it and its operation in the OpenAPI document. The router and `GET /doc` are both built from
//! it, so a route is served exactly when it is documented.

use std::sync::{Arc, OnceLock};

use axum::routing::MethodRouter;
use axum::{Json, Router};
use serde_json::Value;

use crate::handlers::{
    agent, command, config, event, file, mcp, message, permission, project, provider, question, session,
    skill, unsupported,
};
use crate::openapi::{self, Operation};
use crate::state::AppState;

/// One route: its method and path, the handler that answers it, and its documented operation.
struct Route {
    /// The lower-case method.
    method: &'static str,
    /// The path, with `{param}` placeholders.
    path: &'static str,
    /// The handler, under its method.
    handler: fn() -> MethodRouter<Arc<AppState>>,
    /// The operation the document lists.
    operation: fn() -> Operation,
}

/// `route!(get "/path" => handler, operation)`: one entry of [`ROUTES`].
macro_rules! route {
    ($method:ident $path:literal => $handler:expr, $operation:expr) => {
        Route {
            method: stringify!($method),
            path: $path,
            handler: || axum::routing::$method($handler),
            operation: $operation,
        }
    };
}

/// Every route, in the order the document lists them.
const ROUTES: &[Route] = &[
    route!(get "/doc" => doc, openapi::doc),
    route!(get "/event" => event::stream, openapi::event::stream),
    route!(get "/global/event" => event::global_stream, openapi::event::global_stream),
    route!(get "/path" => config::path, openapi::config::path),
    route!(get "/config" => config::client_config, openapi::config::client_config),
    route!(get "/mcp" => mcp::status, openapi::mcp::status),
    route!(get "/permission" => permission::pending, openapi::permission::pending),
    route!(post "/permission/{requestID}/reply" => permission::reply, openapi::permission::reply),
    route!(get "/session" => session::list, openapi::session::list),
    route!(post "/session" => session::create, openapi::session::create),
    route!(get "/session/status" => session::status, openapi::session::status),
    route!(get "/session/{id}" => session::get, openapi::session::get),
    route!(delete "/session/{id}" => session::delete, openapi::session::delete),
    route!(get "/session/{id}/message" => message::list, openapi::message::list),
    route!(post "/session/{id}/message" => message::prompt, openapi::message::prompt),
    route!(post "/session/{id}/prompt_async" => message::prompt_async, openapi::message::prompt_async),
    route!(post "/session/{id}/abort" => session::abort, openapi::session::abort),
    route!(post "/session/{id}/command" => message::command, openapi::message::command),
    route!(get "/session/{id}/children" => session::children, openapi::session::children),
    route!(post "/session/{id}/revert" => session::revert, openapi::session::revert),
    route!(post "/session/{id}/permissions/{permissionID}" => permission::reply_in_session, openapi::permission::reply_in_session),
    route!(get "/config/providers" => provider::config_providers, openapi::provider::config_providers),
    route!(get "/provider" => provider::list, openapi::provider::list),
    route!(get "/provider/auth" => provider::auth, openapi::provider::auth),
    route!(get "/agent" => agent::list, openapi::agent::list),
    route!(get "/command" => command::list, openapi::command::list),
    route!(get "/skill" => skill::list, openapi::skill::list),
    route!(get "/project" => project::list, openapi::project::list),
    route!(get "/project/current" => project::current, openapi::project::current),
    route!(get "/project/{projectID}/directories" => project::directories, openapi::project::directories),
    route!(get "/vcs" => project::vcs, openapi::project::vcs),
    route!(get "/lsp" => unsupported::none, openapi::unsupported::lsp),
    route!(get "/formatter" => unsupported::none, openapi::unsupported::formatter),
    route!(get "/question" => question::list, openapi::question::list),
    route!(post "/question/{requestID}/reply" => question::reply, openapi::question::reply),
    route!(post "/question/{requestID}/reject" => question::reject, openapi::question::reject),
    route!(get "/experimental/capabilities" => config::capabilities, openapi::config::capabilities),
    route!(get "/experimental/console" => config::console, openapi::config::console),
    route!(get "/experimental/resource" => mcp::resources, openapi::mcp::resources),
    route!(get "/experimental/workspace" => unsupported::none, openapi::unsupported::workspaces),
    route!(get "/experimental/workspace/status" => unsupported::none, openapi::unsupported::workspace_status),
    route!(get "/file" => file::list, openapi::file::list),
    route!(get "/file/content" => file::content, openapi::file::content),
    route!(get "/file/status" => file::status, openapi::file::status),
    route!(get "/find" => file::find_text, openapi::file::find_text),
    route!(get "/find/file" => file::find_file, openapi::file::find_file),
    route!(get "/find/symbol" => file::find_symbol, openapi::file::find_symbol),
    route!(get "/api/location" => project::location, openapi::project::location),
    route!(get "/api/agent" => agent::list_v2, openapi::agent::list_v2),
    route!(get "/api/command" => command::list_v2, openapi::command::list_v2),
    route!(get "/api/skill" => skill::list_v2, openapi::skill::list_v2),
    route!(get "/api/provider" => provider::list_v2, openapi::provider::list_v2),
    route!(get "/api/model" => provider::models_v2, openapi::provider::models_v2),
    route!(get "/api/integration" => unsupported::none_v2, openapi::unsupported::integrations),
    route!(get "/api/reference" => unsupported::none_v2, openapi::unsupported::references),
    route!(patch "/session/{id}" => session::update, openapi::session::update),
    route!(get "/session/{id}/message/{messageID}" => message::get, openapi::message::get),
    route!(delete "/session/{id}/message/{messageID}" => unsupported::edit_history, openapi::unsupported::delete_message),
    route!(delete "/session/{id}/message/{messageID}/part/{partID}" => unsupported::edit_history, openapi::unsupported::delete_part),
    route!(patch "/session/{id}/message/{messageID}/part/{partID}" => unsupported::edit_history, openapi::unsupported::update_part),
    route!(get "/session/{id}/todo" => session::todo, openapi::session::todo),
    route!(get "/session/{id}/diff" => session::diff, openapi::session::diff),
    route!(post "/session/{id}/fork" => session::fork, openapi::session::fork),
    route!(post "/session/{id}/share" => unsupported::share, openapi::unsupported::share),
    route!(delete "/session/{id}/share" => unsupported::share, openapi::unsupported::unshare),
    route!(post "/session/{id}/summarize" => session::summarize, openapi::session::summarize),
    route!(post "/session/{id}/init" => session::init, openapi::session::init),
    route!(post "/session/{id}/shell" => unsupported::shell, openapi::unsupported::shell),
    route!(post "/session/{id}/unrevert" => session::unrevert, openapi::session::unrevert),
];

/// Every route as (lower-case method, path with `{param}` placeholders).
pub(crate) fn methods_and_paths() -> &'static [(&'static str, &'static str)] {
    static ALL: OnceLock<Vec<(&str, &str)>> = OnceLock::new();
    ALL.get_or_init(|| ROUTES.iter().map(|route| (route.method, route.path)).collect())
}

/// The router of every route over `state`, with the fallback that names what is not served.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    ROUTES
        .iter()
        .fold(Router::new(), |router, route| router.route(route.path, (route.handler)()))
        .fallback(unsupported::fallback)
        .with_state(state)
}

/// The OpenAPI document of every route.
pub(crate) fn document() -> Value {
    openapi::document(ROUTES.iter().map(|route| (route.method, route.path, (route.operation)())))
}

/// `GET /doc`: the OpenAPI document.
async fn doc() -> Json<Value> {
    Json(document())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_served_route_is_documented_and_every_documented_one_served() {
        let served: BTreeSet<(String, String)> =
            ROUTES.iter().map(|route| (route.method.to_owned(), route.path.to_owned())).collect();
        assert_eq!(served.len(), ROUTES.len(), "a method and path appear twice in the table");
        let doc = document();
        let mut documented = BTreeSet::new();
        let mut ids = BTreeSet::new();
        for (path, operations) in doc["paths"].as_object().into_iter().flatten() {
            for (method, operation) in operations.as_object().into_iter().flatten() {
                documented.insert((method.clone(), path.clone()));
                let id = operation["operationId"].as_str().unwrap_or_default();
                assert!(!id.is_empty(), "{method} {path} has no operationId");
                assert!(ids.insert(id.to_owned()), "{method} {path}: operationId {id} is used twice");
            }
        }
        let undocumented: Vec<_> = served.difference(&documented).collect();
        let unserved: Vec<_> = documented.difference(&served).collect();
        assert!(undocumented.is_empty(), "served but not documented: {undocumented:?}");
        assert!(unserved.is_empty(), "documented but not served: {unserved:?}");
    }
}
