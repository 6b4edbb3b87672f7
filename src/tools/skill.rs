//! The `skill` tool, offered only when skills are loaded (`crate::skills`): the model
//! names a skill listed in the system prompt and gets its instructions and the folder
//! holding its other files (read with the ordinary tools, under the ordinary rules). It
//! reads nothing at call time: the skills were read and checked at start. Read-only.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use crate::skills::Skills;
use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::SKILL;

pub(crate) const NAME: &str = SKILL.name;

pub(crate) struct SkillTool {
    skills: Arc<Skills>,
}

impl SkillTool {
    pub(crate) fn new(skills: Arc<Skills>) -> Self {
        SkillTool { skills }
    }
}

static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| ToolSchema {
    name: NAME.into(),
    description: "Read a skill's instructions and the folder of its files.".into(),
    parameters: vec![super::ParamSpec::new("name", "string", "the skill's name", true)],
    json_schema: None,
});

#[async_trait]
impl Tool for SkillTool {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&SKILL)
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = args
            .get("name")
            .and_then(Value::as_str)
            .map(|n| n.trim().trim_start_matches('$'))
            .unwrap_or_default();
        let Some(s) = self.skills.get(name) else {
            return Err(ToolError::InvalidParams(format!(
                "no skill is named `{name}`; the skills are: {}",
                self.skills.names()
            )));
        };
        let output = json!({
            "name": s.name,
            "folder": s.dir.display().to_string(),
            "instructions": s.body,
        });
        Ok(ToolOutput::new(output, format!("skill {}", s.name)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::skills::{Skill, Source};

    #[tokio::test]
    async fn returns_a_skill_s_instructions_and_folder_or_lists_the_names() {
        let skills = Skills::from_list(vec![Skill {
            name: "fmt".into(),
            description: "d".into(),
            body: "Run the formatter.".into(),
            dir: "/skills/fmt".into(),
            source: Source::User,
        }]);
        let tool = SkillTool::new(Arc::new(skills));
        let ctx = ToolContext::new(".".into(), 1000, std::time::Duration::from_secs(1));
        let out = tool.call(json!({"name": "fmt"}), &ctx).await.unwrap();
        assert_eq!(
            out.result,
            json!({"name": "fmt", "folder": "/skills/fmt", "instructions": "Run the formatter."})
        );
        let e = tool.call(json!({"name": "nope"}), &ctx).await.unwrap_err();
        assert!(e.to_string().contains("the skills are: fmt"), "{e}");
        assert!(tool.meta().unwrap().reads_only());
    }
}
