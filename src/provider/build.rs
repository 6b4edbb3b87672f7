//! From a `Spec` to a running provider: one match arm per wire kind (the extension point
//! for a new kind), every one wrapped in the tool-protocol layer. Reads no settings and
//! no environment; the spec carries everything.

use std::sync::Arc;

use super::text_protocol::wrapper::ToolProtocol;
use super::wire::shared;
use super::{Provider, ProviderError, SetupError, Spec};
use crate::config::WireKind;

/// The provider `spec` describes. Every provider goes through the tool-protocol wrapper:
/// it passes native calls through and switches to the text protocol when the model
/// cannot take tools.
pub fn build(spec: Spec) -> Result<Arc<dyn Provider>, SetupError> {
    let mode = spec.tool_mode;
    let inner = match spec.kind {
        WireKind::Local => return local(spec),
        WireKind::OpenAiChat => shared(spec.clone(), super::openai::Chat),
        WireKind::OpenAiResponses => shared(spec.clone(), super::responses::Responses),
        WireKind::Anthropic => shared(spec.clone(), super::anthropic::Messages),
        WireKind::Google => shared(spec.clone(), super::google::Gemini),
    };
    let inner = inner.map_err(|e: ProviderError| SetupError::Other {
        name: spec.name.clone(),
        message: e.to_string(),
    })?;
    Ok(Arc::new(ToolProtocol::new(inner, mode)))
}

/// The in-process engine (its `[providers.NAME]` settings travel in the spec); it speaks
/// the text protocol itself.
#[cfg(feature = "local")]
fn local(spec: Spec) -> Result<Arc<dyn Provider>, SetupError> {
    Ok(Arc::new(super::local::LocalProvider::from_spec(spec)?))
}

#[cfg(not(feature = "local"))]
fn local(spec: Spec) -> Result<Arc<dyn Provider>, SetupError> {
    Err(SetupError::Unsupported {
        name: spec.name,
        kind: "local (this build has no in-process engine: cargo feature `local`)",
    })
}
