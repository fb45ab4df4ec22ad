//! `session serve` under slow headers: thousands of connections each sending one header byte a
//! second, from the same loopback address as the real client. The client with the token is
//! still answered, and every dripping connection is closed once the header deadline passes.
//! The control: the same dripping connection on a plain `axum::serve` (hyper's defaults) is
//! still open well past that deadline.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use session_e2e::start_serve;

/// How many dripping connections the attack opens.
const DRIPPERS: usize = 2_000;

/// No request reaches the model; the server only needs a provider to start.
const UNUSED_PROVIDER: &str = "http://127.0.0.1:9/v1";

/// The header deadline the server is started with.
const DEADLINE: Duration = Duration::from_secs(2);

/// Raises this process's open-file limit to its hard limit (the dripping connections, and the
/// server started from here, need more than the usual 1,024).
fn raise_open_files() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    }
    let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(soft > (DRIPPERS + 200) as u64, "the open-file limit {soft} is too low for the test");
}

fn address(url: &str) -> SocketAddr {
    url.trim_start_matches("http://").parse().unwrap()
}

/// A connection that has sent the start of a request head and goes on one byte at a time.
fn dripper(addr: SocketAddr) -> Option<TcpStream> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.write_all(b"GET /session HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: ").ok()?;
    Some(stream)
}

/// Whether the peer has closed `stream` (end of file or a reset), without waiting long.
fn closed_by_peer(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
    let mut buffer = [0u8; 512];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// The token `session serve` made in the data folder under `home`.
fn token(home: &Path) -> String {
    std::fs::read_to_string(home.join("data/session/server.token")).unwrap().trim().to_owned()
}

/// Sends one request with `token` on a fresh connection; the status line of the answer.
fn authenticated_request(addr: SocketAddr, token: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let request = format!(
        "GET /session HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_owned()
}

/// Sends one more header byte on every connection still open; drops the ones the server
/// closed.
fn drip(connections: &mut Vec<TcpStream>) {
    connections.retain_mut(|stream| stream.write_all(b"a").is_ok());
}

#[test]
fn dripping_connections_do_not_keep_the_client_with_the_token_out() {
    raise_open_files();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let project = home.join("project");
    session_e2e::mock_project(&project, UNUSED_PROVIDER, 32_000, 4_000).unwrap();
    let deadline_ms = DEADLINE.as_millis().to_string();
    let args = ["--model", "mock/m", "--require-token", "--header-timeout-ms", &deadline_ms];
    let server = start_serve(&project, home, &args).unwrap();
    let addr = address(&server.url);
    let token = token(home);

    let mut drippers = Vec::new();
    let flood_started = Instant::now();
    for opened in 1..=DRIPPERS {
        drippers.extend(dripper(addr));
        // A byte on every connection now and then while the flood goes on.
        if opened % 500 == 0 {
            drip(&mut drippers);
        }
    }
    let flood_took = flood_started.elapsed();
    // The real client, three times over the next seconds, while every dripper still drips.
    for _ in 0..3 {
        drip(&mut drippers);
        let status = authenticated_request(addr, &token);
        assert!(status.starts_with("HTTP/1.1 200"), "the client with the token got {status:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    // Past the deadline (counted from the last connection opened), nothing that never
    // finished its head is kept.
    let settle = Instant::now() + 2 * DEADLINE + Duration::from_secs(1);
    while Instant::now() < settle {
        drip(&mut drippers);
        std::thread::sleep(Duration::from_millis(500));
    }
    let open = drippers.iter_mut().map(closed_by_peer).filter(|closed| !closed).count();
    assert_eq!(
        open, 0,
        "{open} of {DRIPPERS} dripping connections are still open (the flood took {flood_took:?})"
    );
    let status = authenticated_request(addr, &token);
    assert!(status.starts_with("HTTP/1.1 200"), "after the flood: {status:?}");
}

/// How long a lone dripping connection stays open, watched for `watch` (`None`: still open).
fn lone_dripper_lifetime(addr: SocketAddr, watch: Duration) -> Option<Duration> {
    let mut stream = dripper(addr).unwrap();
    let started = Instant::now();
    while started.elapsed() < watch {
        if closed_by_peer(&mut stream) {
            return Some(started.elapsed());
        }
        if stream.write_all(b"a").is_err() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dripping_connection_is_closed_at_the_deadline_and_plain_axum_keeps_it() {
    // Control: a plain axum::serve keeps a dripping connection past twice the deadline.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/session", axum::routing::get(|| async { "[]" }));
    let control = tokio::spawn(async move { axum::serve(listener, app).await });
    let kept = tokio::task::spawn_blocking(move || lone_dripper_lifetime(plain, 2 * DEADLINE)).await.unwrap();
    assert_eq!(kept, None, "plain axum closed the dripping connection");
    control.abort();

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_path_buf();
    let project = home.join("project");
    session_e2e::mock_project(&project, UNUSED_PROVIDER, 32_000, 4_000).unwrap();
    let deadline_ms = DEADLINE.as_millis().to_string();
    let args = ["--model", "mock/m", "--require-token", "--header-timeout-ms", &deadline_ms];
    let server = start_serve(&project, &home, &args).unwrap();
    let addr = address(&server.url);
    let token = token(&home);
    let (lifetime, status) = tokio::task::spawn_blocking(move || {
        let lifetime = lone_dripper_lifetime(addr, 4 * DEADLINE);
        (lifetime, authenticated_request(addr, &token))
    })
    .await
    .unwrap();
    let lifetime = lifetime.expect("session serve kept a connection that never finished its head");
    assert!(lifetime >= DEADLINE / 2, "closed before the deadline: {lifetime:?}");
    // A request sent promptly is answered.
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
}
