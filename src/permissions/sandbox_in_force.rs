//! The sandbox in force: the `Confinement` every tool process started from now on gets
//! (set once at start by `sandbox::install`), and the one call the user approved to run
//! outside it (`unsandboxed`). The launcher reads it when it starts a tool; the
//! permission engine and the built-in file tools read it to judge a write as the kernel
//! will. Holds the value only: resolves and applies nothing.

use std::sync::{Arc, RwLock};

use crate::policy::confinement::Confinement;

/// The sandbox every tool process starts in (`launcher::sandboxed_command`); `None`: none.
static SANDBOX: RwLock<Option<Arc<Confinement>>> = RwLock::new(None);

/// Sets (or clears) the sandbox for the tool processes started from now on. ikigai sets it
/// once at start (`install`); a bench compares both.
pub fn set_sandbox(sandbox: Option<Confinement>) {
    *SANDBOX.write().unwrap_or_else(|e| e.into_inner()) = sandbox.map(Arc::new);
}

/// The sandbox tool processes start in, if any.
pub fn sandbox() -> Option<Arc<Confinement>> {
    SANDBOX.read().unwrap_or_else(|e| e.into_inner()).clone()
}

tokio::task_local! {
    /// Set inside `unsandboxed`: this call's processes start without the sandbox.
    static OUTSIDE: ();
}

/// Runs `call` (one tool call the user approved to run outside the sandbox, say) with its
/// processes started unconfined; every other call stays in the sandbox.
pub async fn unsandboxed<F: std::future::Future>(call: F) -> F::Output {
    OUTSIDE.scope((), call).await
}

/// The sandbox a process started now from this task gets: `sandbox()`, except inside
/// `unsandboxed`.
pub fn current_sandbox() -> Option<Arc<Confinement>> {
    sandbox().filter(|_| !outside())
}

/// Whether the current task runs inside `unsandboxed`.
fn outside() -> bool {
    OUTSIDE.try_with(|_| ()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_a_call_run_unsandboxed_leaves_the_sandbox() {
        assert!(!outside());
        assert!(unsandboxed(async { outside() }).await);
        assert!(!outside(), "the scope ends with the call");
    }
}
