//! Skills the user names in a prompt: `/skill NAME PROMPT` (a message, read here) and
//! `$NAME` anywhere in it send the skill's instructions with the prompt, as an
//! attachment kept apart from the typed text. The skills themselves are loaded at start
//! (`crate::skills`); this reads no file.

use crate::skills::Skills;

/// The text to send for `text`: `/skill NAME PROMPT` becomes `$NAME PROMPT`; any other
/// text is itself. `Err` says why nothing may be sent (no skill of that name).
pub(crate) fn message(skills: &Skills, text: &str) -> Result<String, String> {
    let t = text.trim_start();
    let Some(rest) = t
        .strip_prefix("/skill")
        .filter(|r| r.starts_with(char::is_whitespace))
    else {
        return Ok(text.to_string());
    };
    let rest = rest.trim();
    let (name, prompt) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let name = name.trim_start_matches('$');
    if skills.get(name).is_none() {
        let known = if skills.is_empty() {
            "no skills are loaded".to_string()
        } else {
            format!("the skills are: {}", skills.names())
        };
        return Err(format!("/skill: no skill is named `{name}` ({known})"));
    }
    Ok(format!("${name} {}", prompt.trim()).trim_end().to_string())
}

/// Adds each skill `text` names (`$NAME`) to a user message's attachment lines and
/// blocks.
pub(crate) fn attach(skills: &Skills, text: &str, lines: &mut Vec<String>, blocks: &mut String) {
    for skill in skills.mentioned(text) {
        lines.push(format!("skill {}", skill.name));
        blocks.push_str(&format!("\n\n{}", skill.block()));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::skills::{Skill, Source};

    #[test]
    fn slash_skill_names_a_known_skill_or_sends_nothing() {
        let skills = Skills::from_list(vec![Skill {
            name: "fmt".into(),
            description: "d".into(),
            body: "BODY".into(),
            dir: "/s/fmt".into(),
            source: Source::User,
        }]);
        assert_eq!(
            message(&skills, "/skill fmt  tidy src ").unwrap(),
            "$fmt tidy src"
        );
        assert_eq!(message(&skills, "/skill $fmt").unwrap(), "$fmt");
        assert_eq!(message(&skills, "plain /skill fmt").unwrap(), "plain /skill fmt");
        assert_eq!(
            message(&skills, "/skills-are-great").unwrap(),
            "/skills-are-great"
        );
        let e = message(&skills, "/skill nope go").unwrap_err();
        assert!(
            e.contains("no skill is named `nope` (the skills are: fmt)"),
            "{e}"
        );
        assert!(
            message(&Skills::default(), "/skill fmt")
                .unwrap_err()
                .contains("no skills are loaded")
        );
        let (mut lines, mut blocks) = (Vec::new(), String::new());
        attach(&skills, "$fmt and $fmt", &mut lines, &mut blocks);
        assert_eq!(lines, ["skill fmt"]);
        assert_eq!(
            blocks,
            "\n\n<skill name=\"fmt\" folder=\"/s/fmt\">\nBODY\n</skill>"
        );
    }
}
