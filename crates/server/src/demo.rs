//! The demo of `dnz serve --demo`: the zone `example.com` with plain and steered records
//! (SPEC §4's examples), loaded once when the zone is not there yet; the synthetic GeoIP
//! database that places the documentation ranges lives in `geo::demo`.

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
www     IN A   203.0.113.10
www     IN A   198.51.100.20
www     IN AAAA 2001:db8::30
www     IN AAAA 2001:db8:4000::20
canary  IN A   192.0.2.1
canary  IN A   192.0.2.2
api     IN CNAME www
*.dev   IN A   203.0.113.7
_sip._udp IN SRV 0 5 5060 www
@       IN CAA 0 issue "letsencrypt.org"
"#;

/// Steering of demo records: (name, type, address, steering).
fn demo_steering() -> Vec<(&'static str, &'static str, &'static str, api::SteeringSpec)> {
    let place = |countries: &[&str], continents: &[&str]| api::SteeringSpec {
        countries: countries.iter().map(|c| c.to_string()).collect(),
        continents: continents.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    };
    let weight = |w: i64| api::SteeringSpec {
        weight: Some(w),
        ..Default::default()
    };
    vec![
        // Indonesia → Jakarta, Europe → Frankfurt, everyone else → the default 192.0.2.30.
        ("www", "A", "203.0.113.10", place(&["ID"], &[])),
        ("www", "A", "198.51.100.20", place(&[], &["EU"])),
        ("www", "AAAA", "2001:db8:4000::20", place(&[], &["EU"])),
        // Canary: 10 % of answers to the new address.
        ("canary", "A", "192.0.2.1", weight(9)),
        ("canary", "A", "192.0.2.2", weight(1)),
    ]
}

pub async fn load(manager: &Manager) -> anyhow::Result<()> {
    if manager.zone("example.com").await.is_ok() {
        return Ok(());
    }
    manager
        .import("example.com", DEMO_ZONE)
        .await
        .map_err(|e| anyhow::anyhow!("loading the demo zone: {e}"))?;
    let records = manager
        .records("example.com")
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (name, rtype, address, steering) in demo_steering() {
        let Some(record) = records
            .iter()
            .find(|r| r.name == name && r.rtype == rtype && r.value == address)
        else {
            anyhow::bail!("demo record {name} {rtype} {address} is missing");
        };
        manager
            .set_steering("example.com", record.id, Some(&steering))
            .await
            .map_err(|e| anyhow::anyhow!("steering demo record {name} {address}: {e}"))?;
    }
    tracing::info!("demo zone example.com loaded, with steered records");
    Ok(())
}
