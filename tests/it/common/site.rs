//! A small HTTP/1.1 server on 127.0.0.1 for tests of tools that fetch (`web_fetch`): it
//! answers from a route function by path (or never, to test timeouts), closes each
//! connection after one answer, and records every request's head for assertions such as
//! "nothing was sent" or "no key in the headers". Not a model vendor (see `fake_provider`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One answer of the test server.
pub struct Answer {
    pub status: &'static str,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Bytes promised in `Content-Length` past `body` and never sent: the connection is
    /// held open after `body` until the test ends.
    pub promised: usize,
}

pub fn answer(status: &'static str, content_type: &str, body: impl Into<Vec<u8>>) -> Answer {
    Answer {
        status,
        headers: vec![("Content-Type".into(), content_type.into())],
        body: body.into(),
        promised: 0,
    }
}

/// `answer`, whose body stops after `body` although `promised` more bytes are announced.
pub fn stalling(content_type: &str, body: impl Into<Vec<u8>>, promised: usize) -> Answer {
    Answer {
        promised,
        ..answer("200 OK", content_type, body)
    }
}

pub fn redirect(to: &str) -> Answer {
    Answer {
        status: "302 Found",
        headers: vec![("Location".into(), to.into())],
        body: Vec::new(),
        promised: 0,
    }
}

type Routes = Arc<dyn Fn(&str) -> Option<Answer> + Send + Sync>;

/// An HTTP/1.1 server on 127.0.0.1 answering from `routes` by path (`None`: never
/// answers), recording each request's head.
pub struct Site {
    pub port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Site {
    pub fn start(routes: impl Fn(&str) -> Option<Answer> + Send + Sync + 'static) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let routes: Routes = Arc::new(routes);
        let (s, st) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (s, st, routes) = (s.clone(), st.clone(), routes.clone());
                        std::thread::spawn(move || serve(stream, &s, &st, &routes));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Site { port, seen, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The heads of the requests received so far.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(mut stream: TcpStream, seen: &Mutex<Vec<String>>, stop: &AtomicBool, routes: &Routes) {
    stream.set_nonblocking(false).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    seen.lock().unwrap().push(head.clone());
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let Some(a) = routes(&path) else {
        // Never answers: holds the connection until the test ends.
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        return;
    };
    let mut out = format!(
        "HTTP/1.1 {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        a.status,
        a.body.len() + a.promised
    );
    for (k, v) in &a.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.write_all(&a.body);
    let _ = stream.flush();
    while a.promised > 0 && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}
