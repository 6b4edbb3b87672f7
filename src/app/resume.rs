//! Continuing a stored session in a run (`-c`, `--resume ID`): loading it, and which
//! provider and model it continues with when the command line names others. Never prints:
//! what the user should know goes to the front end as a notice.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use super::AppError;
use crate::agent::{Resume, Resumed};
use crate::config::Config;
use crate::protocol::{Event, NoticeLevel};
use crate::provider::Spec;
use crate::store::{Sessions, StoreError};

/// Loads the session to continue; "none there" is the user's to fix (exit 2).
pub(super) async fn load_session(
    store: &dyn Sessions,
    which: &Resume,
    cwd: &std::path::Path,
) -> Result<Resumed, AppError> {
    match crate::agent::resume::load(store, which, cwd).await {
        Ok(r) => Ok(r),
        Err(StoreError::NotFound(_)) => Err(AppError::NoSession(match which {
            Resume::LatestInCwd => "no stored session in this folder; `ikigai sessions` lists all".into(),
            Resume::Id(id) => format!("no stored session matches `{id}`; `ikigai sessions` lists all"),
        })),
        Err(e @ StoreError::Ambiguous { .. }) => {
            Err(AppError::NoSession(format!("{e}; `ikigai sessions` lists all")))
        }
        Err(e) => Err(e.into()),
    }
}

/// An explicit `--provider` / `--model` (or `IKIGAI_PROVIDER` / `IKIGAI_MODEL`) wins over
/// the provider and model a resumed session used last; says so, and returns the model to
/// record. Without one, the session continues on its own provider and model.
pub(super) fn flag_model_wins(
    r: &mut Resumed,
    spec: &Spec,
    cli: &crate::cli::Cli,
    events: &UnboundedSender<Event>,
) -> Option<String> {
    let env_set = |k: &str| crate::environ::var(k).is_some_and(|v| !v.is_empty());
    let source = if cli.provider.is_some() {
        "--provider"
    } else if cli.model.is_some() {
        "--model"
    } else if env_set("IKIGAI_PROVIDER") {
        "IKIGAI_PROVIDER"
    } else if env_set("IKIGAI_MODEL") {
        "IKIGAI_MODEL"
    } else {
        return None;
    };
    let stored_provider = r
        .provider
        .replace(spec.name.clone())
        .unwrap_or_else(|| spec.name.clone());
    let stored = r.model.clone()?;
    if stored == spec.model && stored_provider == spec.name {
        return None;
    }
    r.model = Some(spec.model.clone());
    let (was, now) = if stored_provider == spec.name {
        (stored, spec.model.clone())
    } else {
        (
            format!("{stored_provider}/{stored}"),
            format!("{}/{}", spec.name, spec.model),
        )
    };
    let _ = events.send(Event::notice(
        NoticeLevel::Info,
        format!("the session used {was}; {source} wins: {now}"),
    ));
    Some(spec.model.clone())
}

/// The provider a resumed session continues on: the one it used last, when that is not
/// the configured one (`spec`) and it can be set up here (else the agent says why and
/// keeps the configured one). Built here so a missing key for the configured provider
/// does not stop a session that uses another.
pub(super) fn resumed_provider(
    r: &Resumed,
    config: &Config,
    spec: &Spec,
) -> Option<Arc<dyn crate::provider::Provider>> {
    let name = r.provider.as_deref()?;
    if name == spec.name {
        return None;
    }
    let other =
        crate::provider::spec_for(config, name, r.model.as_deref(), &crate::provider::env_key).ok()?;
    let p = crate::provider::build(other).ok()?;
    p.setup_hint().is_empty().then_some(p)
}
