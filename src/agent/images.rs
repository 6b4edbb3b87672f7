//! Whether the images attached to a prompt can go to the provider in use (the in-process
//! engine, the text protocol and a model set up without image input take none; others
//! take only their types). What an image is lives in `crate::images`.

use crate::images::names;
use crate::message::Image;

/// Why `images` cannot go to `provider`, which takes the types `accepted`; `None` when they
/// can (or there are none).
pub(crate) fn refused(
    provider: &dyn crate::provider::Provider,
    images: &[Image],
    accepted: &[&str],
) -> Option<String> {
    if images.is_empty() {
        return None;
    }
    if accepted.is_empty() {
        return Some(refusal(provider));
    }
    let odd = images.iter().find(|i| !accepted.contains(&i.mime.as_str()))?;
    Some(format!(
        "{} takes {} images, not {}; nothing was sent",
        provider.spec().model,
        names(accepted),
        names(&[odd.mime.as_str()])
    ))
}

/// Why an image cannot go to `provider`: the in-process engine, the text protocol, or a
/// model configured (or by default taken) as having no image input.
pub(crate) fn refusal(provider: &dyn crate::provider::Provider) -> String {
    let spec = provider.spec();
    let why = if spec.kind == crate::config::WireKind::Local {
        "the in-process engine takes no images".to_string()
    } else if spec.images {
        "the text tool protocol sends text only".to_string()
    } else {
        format!(
            "provider `{}` is set up for models without image input (if {} takes images, set \
             images = true in [providers.{}])",
            spec.name, spec.model, spec.name
        )
    };
    format!("{} cannot see images: {why}; nothing was sent", spec.model)
}
