//! The demo zone `example.com` for `dnz serve --demo`: a few plain records covering the usual
//! types, loaded once when the zone is not there yet.

use crate::manage::Manager;

const DEMO_ZONE: &str = r#"$ORIGIN example.com.
$TTL 300
@       IN SOA ns1 hostmaster 1 3600 600 1209600 300
@       IN NS  ns1
@       IN NS  ns2
@       IN MX  10 mail
@       IN TXT "v=spf1 mx -all"
@       IN A   192.0.2.1
ns1     IN A   192.0.2.53
ns2     IN A   198.51.100.53
mail    IN A   192.0.2.25
www     IN A   192.0.2.30
www     IN AAAA 2001:db8::30
api     IN CNAME www
*.dev   IN A   203.0.113.7
_sip._udp IN SRV 0 5 5060 www
@       IN CAA 0 issue "letsencrypt.org"
"#;

pub async fn load(manager: &Manager) -> anyhow::Result<()> {
    if manager.zone("example.com").await.is_ok() {
        return Ok(());
    }
    manager
        .import("example.com", DEMO_ZONE)
        .await
        .map_err(|e| anyhow::anyhow!("loading the demo zone: {e}"))?;
    tracing::info!("demo zone example.com loaded");
    Ok(())
}
