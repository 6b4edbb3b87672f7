//! OpenAI Responses API (`/responses`): stateless requests (`store: false`) with function
//! tools, reasoning items sent back with their encrypted content, and the `response.*`
//! stream decoded into `StreamEvent`s.

pub mod request;
pub mod stream;

use async_trait::async_trait;

use super::http;
use super::{EventStream, Provider, ProviderError, Request, Spec};
use stream::ResponsesDecoder;

/// A Responses API endpoint.
pub struct OpenAiResponses {
    client: reqwest::Client,
    spec: Spec,
}

impl OpenAiResponses {
    pub fn from_spec(spec: Spec) -> Result<Self, ProviderError> {
        Ok(OpenAiResponses {
            client: http::client(spec.connect_timeout)?,
            spec,
        })
    }
}

#[async_trait]
impl Provider for OpenAiResponses {
    fn spec(&self) -> &Spec {
        &self.spec
    }

    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        http::list_models(&self.client, &self.spec).await
    }

    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let body = serde_json::to_vec(&request::body(&request, &self.spec)).map_err(http::encode_error)?;
        let started = tokio::time::Instant::now();
        let resp = http::post(
            &self.client,
            &self.spec,
            "/responses",
            request.model,
            body,
            http::KeyHeader::Bearer,
        )
        .await?;
        let max = self.spec.max_response_bytes;
        let data = http::sse_data(resp, self.spec.idle, max.saturating_mul(2));
        let events = super::decode::decode(data, ResponsesDecoder::new(max));
        Ok(self.spec.bounded(events, started))
    }
}
