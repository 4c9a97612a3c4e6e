//! What the layer and its backends logged, from every thread (the runtimes' workers log,
//! not the test), caught by the one subscriber a test binary may install.

#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Installs the subscriber once; every test calls it before it logs anything.
pub fn capture() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        logs
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The lines logged so far that hold `text` (a key unique to one test).
pub fn lines_with(text: &str) -> Vec<String> {
    let logs = capture().lock().unwrap();
    String::from_utf8_lossy(&logs)
        .lines()
        .filter(|line| line.contains(text))
        .map(str::to_string)
        .collect()
}

/// Every line logged so far.
pub fn all() -> String {
    String::from_utf8_lossy(&capture().lock().unwrap()).into_owned()
}
