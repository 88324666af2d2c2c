//! A client of OpenAI-compatible embeddings endpoints (`POST` with
//! `{"model", "input": [texts], "dimensions"?}`, answered with
//! `{"data": [{"index", "embedding"}]}`), used by the embedder actor.
//!
//! Failures are sorted by what to do next: a timeout, a connection error,
//! `429` or a `5xx` is worth retrying later; any other refusal is about the
//! texts sent and would be refused again.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::config::EmbeddingSettings;
use crate::domain::vector::Embedding;

/// Largest answer read: a full batch of the largest vectors, as JSON text.
const MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// Longest text sent, in bytes (cut at a character boundary): more than
/// the input limit of common embedding models, so nothing they would read
/// is lost.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// Worth trying again later.
    #[error("{0}")]
    Retry(String),
    /// The endpoint refused these texts.
    #[error("{0}")]
    Refused(String),
}

pub struct EmbeddingsClient {
    client: awc::Client,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    dimensions: Option<usize>,
}

impl EmbeddingsClient {
    /// Must be made and used on one thread (an actix arbiter).
    pub fn new(settings: &EmbeddingSettings) -> EmbeddingsClient {
        EmbeddingsClient {
            client: awc::Client::builder()
                .timeout(Duration::from_millis(settings.timeout_ms))
                .finish(),
            endpoint: settings.endpoint.clone(),
            model: settings.model.clone(),
            api_key: settings.api_key(),
            dimensions: settings.dimensions,
        }
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let mut request = self.client.post(&self.endpoint);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let mut response = request
            .send_json(&request_body(&self.model, texts, self.dimensions))
            .await
            .map_err(|e| EmbedError::Retry(format!("request to {} failed: {e}", self.endpoint)))?;
        let status = response.status();
        let body = response
            .body()
            .limit(MAX_RESPONSE_BYTES)
            .await
            .map_err(|e| EmbedError::Retry(format!("reading the answer failed: {e}")))?;
        if !status.is_success() {
            let detail = String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned();
            let message = format!("the endpoint answered {status}: {detail}");
            return Err(if status.as_u16() == 429 || status.is_server_error() {
                EmbedError::Retry(message)
            } else {
                EmbedError::Refused(message)
            });
        }
        // A successful answer that is not what was asked for is the
        // endpoint's fault, not the texts': try again later.
        parse_response(&body, texts.len(), self.dimensions).map_err(EmbedError::Retry)
    }
}

/// `text` cut to at most [`MAX_TEXT_BYTES`], at a character boundary.
pub fn clip(text: &str) -> &str {
    if text.len() <= MAX_TEXT_BYTES {
        return text;
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

pub fn request_body(model: &str, texts: &[&str], dimensions: Option<usize>) -> serde_json::Value {
    let mut body = json!({
        "model": model,
        "input": texts.iter().map(|t| clip(t)).collect::<Vec<_>>(),
        "encoding_format": "float",
    });
    if let Some(dimensions) = dimensions {
        body["dimensions"] = json!(dimensions);
    }
    body
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f64>,
}

/// The vectors of an answer, in the order of the texts sent; why not,
/// when the answer is not one vector per text (each checked like a
/// client's, and of `dimensions` when asked for).
pub fn parse_response(
    body: &[u8],
    expected: usize,
    dimensions: Option<usize>,
) -> Result<Vec<Embedding>, String> {
    let response: Response =
        serde_json::from_slice(body).map_err(|e| format!("unexpected answer: {e}"))?;
    if response.data.len() != expected {
        return Err(format!(
            "{} vectors for {expected} texts",
            response.data.len()
        ));
    }
    let mut vectors: Vec<Option<Embedding>> = vec![None; expected];
    for (position, item) in response.data.into_iter().enumerate() {
        let index = item.index.unwrap_or(position);
        let slot = vectors
            .get_mut(index)
            .ok_or_else(|| format!("vector index {index} out of range"))?;
        if slot.is_some() {
            return Err(format!("two vectors for index {index}"));
        }
        let embedding = Embedding::new(&format!("data[{position}].embedding"), item.embedding)
            .map_err(|e| format!("{}: {}", e.field, e.message))?;
        if let Some(dimensions) = dimensions {
            if embedding.dimensions() != dimensions {
                return Err(format!(
                    "a vector has {} dimensions, {dimensions} were asked for",
                    embedding.dimensions()
                ));
            }
        }
        *slot = Some(embedding);
    }
    Ok(vectors.into_iter().flatten().collect())
}

/// The wait before the next attempt after consecutive failures: `initial`,
/// doubling with each failure, at most `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            next: initial,
        }
    }

    /// The wait after one more failure.
    pub fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        wait
    }

    pub fn succeeded(&mut self) {
        self.next = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_gives_one_vector_per_text_in_index_order() {
        let body = br#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,1.0]},
            {"object":"embedding","index":0,"embedding":[1.0,0.0]}],"model":"m"}"#;
        let vectors = parse_response(body, 2, None).unwrap();
        assert_eq!(vectors[0].values(), &[1.0, 0.0]);
        assert_eq!(vectors[1].values(), &[0.0, 1.0]);
        assert!(parse_response(body, 3, None)
            .unwrap_err()
            .contains("2 vectors"));
        assert!(parse_response(body, 2, Some(3))
            .unwrap_err()
            .contains("3 were asked"));
        let twice = br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#;
        assert!(parse_response(twice, 2, None).is_err());
        let zero = br#"{"data":[{"embedding":[0, 0]}]}"#;
        assert!(parse_response(zero, 1, None).is_err());
        assert!(parse_response(b"<html>", 1, None).is_err());
    }

    #[test]
    fn a_request_names_the_model_and_the_dimensions_asked_for() {
        let body = request_body("m", &["a"], Some(256));
        assert_eq!(body["model"], "m");
        assert_eq!(body["input"], json!(["a"]));
        assert_eq!(body["dimensions"], 256);
        assert!(request_body("m", &[], None).get("dimensions").is_none());
    }

    #[test]
    fn long_texts_are_clipped_at_a_character_boundary() {
        let text = "é".repeat(MAX_TEXT_BYTES);
        let clipped = clip(&text);
        assert!(clipped.len() <= MAX_TEXT_BYTES);
        assert!(clipped.len() >= MAX_TEXT_BYTES - 1);
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn backoff_doubles_up_to_its_maximum_and_resets() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let waits: Vec<u128> = (0..4).map(|_| backoff.failed().as_millis()).collect();
        assert_eq!(waits, [100, 200, 350, 350]);
        backoff.succeeded();
        assert_eq!(backoff.failed().as_millis(), 100);
    }
}
