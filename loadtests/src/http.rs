//! The HTTP client every command talks to engram with.

use std::time::Duration;

use serde_json::Value;

pub fn client(headers: &[(String, String)]) -> awc::Client {
    let mut builder = awc::Client::builder()
        .timeout(Duration::from_secs(60))
        .connector(awc::Connector::new().limit(0));
    for (name, value) in headers {
        builder = builder.add_default_header((name.as_str(), value.as_str()));
    }
    builder.finish()
}

/// POSTs JSON; answers the status and the JSON answer (`null` if none).
pub async fn post(client: &awc::Client, url: &str, body: &Value) -> Result<(u16, Value), String> {
    let mut response = client
        .post(url)
        .send_json(body)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let bytes = response
        .body()
        .limit(256 << 20)
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// The value of the counter or gauge `name` in `GET /metrics`.
pub async fn metric(client: &awc::Client, base: &str, name: &str) -> Result<f64, String> {
    let mut response = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if response.status().as_u16() != 200 {
        return Err(format!("GET /metrics answered {}", response.status()));
    }
    let bytes = response
        .body()
        .limit(16 << 20)
        .await
        .map_err(|e| e.to_string())?;
    String::from_utf8_lossy(&bytes)
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .ok_or_else(|| format!("GET /metrics has no {name}"))
}
