//! `GET /file/status` (read by OpenCode's TUI) on a repository the model booby-trapped
//! (to run its code when git looks at it): fsmonitor in the repository, in a submodule and in a nested
//! repository, hooks, filter and diff drivers. The route reads through libgit2 and runs none
//! of them; the control runs what the route used to run (`git status`, `git diff --numstat`)
//! and the traps fire.

use serde_json::json;
use session_testkit::{git_traps, plain_git_status};

use super::support::fixture;

const HELLO: &str = r#"{"turns": [{"text": "Hello there."}]}"#;

#[tokio::test]
async fn file_status_runs_none_of_the_repositorys_programs_and_keeps_opencodes_shape() {
    let f = fixture(HELLO).await;
    let project = f.project();
    let outside = project.parent().unwrap().to_path_buf();
    let traps = git_traps(&project, &outside.join("scripts"), &outside.join("markers"));

    let (status, body) = f.api.call("get", "/file/status", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(traps.fired(), Vec::<String>::new(), "the route ran the repository's programs");
    // OpenCode's `File[]`: path, added, removed, status; the submodule is not looked into and
    // the nested repository is one untracked entry.
    assert_eq!(
        body,
        json!([
            {"path": ".env", "added": 1, "removed": 0, "status": "added"},
            {"path": "README.md", "added": 1, "removed": 1, "status": "modified"},
            {"path": "gone.txt", "added": 0, "removed": 2, "status": "deleted"},
            {"path": "new.txt", "added": 3, "removed": 0, "status": "added"},
            {"path": "src/app.py", "added": 1, "removed": 0, "status": "added"},
            {"path": "vendor/nested/", "added": 0, "removed": 0, "status": "added"},
        ])
    );

    // The control: the git commands the route ran before run the traps in this repository.
    plain_git_status(&project);
    let fired = traps.fired();
    for trap in ["filter-clean", "fsmonitor", "submodule-fsmonitor"] {
        assert!(fired.iter().any(|name| name == trap), "plain git did not run {trap}: {fired:?}");
    }
    f.finish().await;
}

#[tokio::test]
async fn file_status_outside_a_repository_is_empty() {
    let f = fixture(HELLO).await;
    let (status, body) = f.api.call("get", "/file/status", None).await;
    assert_eq!((status.as_u16(), body), (200, json!([])));
    f.finish().await;
}
