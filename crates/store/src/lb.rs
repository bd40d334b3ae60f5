//! Pools, origins and load balancers (SPEC §7) in the store. Rows are read back through the
//! same validation as API input, so a stored value that no longer validates is reported as
//! corrupt instead of being served.

use model::Dname;
use model::lb::{
    LbConfig, LbRuleSpec, LoadBalancerSpec, Location, OriginSpec, PoolConfig, PoolSpec,
};
use model::steering::Validate as _;
use sqlx::Row;

use crate::{Result, Store, StoreError};

fn corrupt(what: &str, errors: Vec<model::FieldError>) -> StoreError {
    StoreError::Corrupt(format!(
        "{what}: {}",
        errors.first().map(|e| e.to_string()).unwrap_or_default()
    ))
}

fn json_error(e: serde_json::Error) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

async fn set_serial(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    zone_id: i64,
    serial: u32,
) -> Result<()> {
    sqlx::query("UPDATE zones SET serial = ? WHERE id = ?")
        .bind(serial as i64)
        .bind(zone_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Store {
    /// A zone's pools with their origins, in creation order.
    pub async fn load_pools(&self, zone_id: i64) -> Result<Vec<PoolConfig>> {
        let rows = sqlx::query("SELECT * FROM pools WHERE zone_id = ? ORDER BY id")
            .bind(zone_id)
            .fetch_all(&self.pool)
            .await?;
        let mut pools = Vec::with_capacity(rows.len());
        for row in rows {
            let id: i64 = row.try_get("id")?;
            let name: String = row.try_get("name")?;
            let origin_rows =
                sqlx::query("SELECT * FROM origins WHERE pool_id = ? ORDER BY position, id")
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await?;
            let mut origin_ids = Vec::new();
            let mut origins = Vec::new();
            for origin in &origin_rows {
                origin_ids.push(origin.try_get::<i64, _>("id")?);
                let check = match origin.try_get::<Option<String>, _>("health_check")? {
                    None => None,
                    Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                        StoreError::Corrupt(format!("check of an origin of pool {name}: {e}"))
                    })?),
                };
                origins.push(OriginSpec {
                    address: origin.try_get("address")?,
                    enabled: Some(origin.try_get::<i64, _>("enabled")? != 0),
                    weight: Some(origin.try_get("weight")?),
                    priority: Some(origin.try_get("priority")?),
                    check,
                });
            }
            let latitude: Option<f64> = row.try_get("latitude")?;
            let longitude: Option<f64> = row.try_get("longitude")?;
            let spec = PoolSpec {
                name: name.clone(),
                enabled: Some(row.try_get::<i64, _>("enabled")? != 0),
                algorithm: Some(row.try_get("algorithm")?),
                location: latitude
                    .zip(longitude)
                    .map(|(latitude, longitude)| Location {
                        latitude,
                        longitude,
                    }),
                origins,
            };
            let mut pool = spec
                .validate("")
                .map_err(|e| corrupt(&format!("pool {name}"), e))?;
            pool.id = id;
            for (origin, origin_id) in pool.origins.iter_mut().zip(origin_ids) {
                origin.id = origin_id;
            }
            pools.push(pool);
        }
        Ok(pools)
    }

    /// A zone's load balancers, in creation order.
    pub async fn load_load_balancers(&self, zone_id: i64, zone: &Dname) -> Result<Vec<LbConfig>> {
        let rows = sqlx::query("SELECT * FROM load_balancers WHERE zone_id = ? ORDER BY id")
            .bind(zone_id)
            .fetch_all(&self.pool)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let wire: Vec<u8> = row.try_get("name")?;
            let name = Dname::from_wire(&wire)
                .ok_or_else(|| StoreError::Corrupt("bad load balancer name".into()))?;
            let list = |col: &str| -> Result<String> { Ok(row.try_get(col)?) };
            let pools: Vec<String> = serde_json::from_str(&list("pools")?)
                .map_err(|e| StoreError::Corrupt(format!("pools of {name}: {e}")))?;
            let rules: Vec<LbRuleSpec> = serde_json::from_str(&list("rules")?)
                .map_err(|e| StoreError::Corrupt(format!("rules of {name}: {e}")))?;
            let spec = LoadBalancerSpec {
                name: name.to_string(),
                enabled: Some(row.try_get::<i64, _>("enabled")? != 0),
                ttl: Some(row.try_get("ttl")?),
                pools,
                rules,
                fallback: row.try_get("fallback")?,
                steering: Some(row.try_get("steering")?),
                locate_by: Some(row.try_get("locate_by")?),
                affinity: Some(row.try_get("affinity")?),
            };
            let mut lb = model::lb::validate_lb(&spec, zone)
                .map_err(|e| corrupt(&format!("load balancer {name}"), e))?;
            lb.id = row.try_get("id")?;
            out.push(lb);
        }
        Ok(out)
    }

    /// Writes a pool (a new one when its id is 0, else in place of the stored one) with its
    /// origins, and the zone's new serial, in one transaction. Origins that have an id keep it.
    pub async fn save_pool(
        &self,
        zone_id: i64,
        serial: u32,
        pool: &PoolConfig,
    ) -> Result<PoolConfig> {
        let mut tx = self.pool.begin().await?;
        set_serial(&mut tx, zone_id, serial).await?;
        let (latitude, longitude) = match pool.location {
            Some(at) => (Some(at.latitude), Some(at.longitude)),
            None => (None, None),
        };
        let id: i64 = if pool.id == 0 {
            sqlx::query(
                "INSERT INTO pools (zone_id, name, enabled, algorithm, latitude, longitude)
                 VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            )
            .bind(zone_id)
            .bind(&pool.name)
            .bind(pool.enabled as i64)
            .bind(pool.algorithm.as_str())
            .bind(latitude)
            .bind(longitude)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?
        } else {
            sqlx::query(
                "UPDATE pools SET name = ?, enabled = ?, algorithm = ?, latitude = ?, longitude = ?
                 WHERE id = ? AND zone_id = ?",
            )
            .bind(&pool.name)
            .bind(pool.enabled as i64)
            .bind(pool.algorithm.as_str())
            .bind(latitude)
            .bind(longitude)
            .bind(pool.id)
            .bind(zone_id)
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM origins WHERE pool_id = ?")
                .bind(pool.id)
                .execute(&mut *tx)
                .await?;
            pool.id
        };
        let mut stored = pool.clone();
        stored.id = id;
        for (position, origin) in stored.origins.iter_mut().enumerate() {
            let check = origin
                .check
                .as_ref()
                .map(|c| serde_json::to_string(&c.to_spec()).map_err(json_error))
                .transpose()?;
            origin.id = sqlx::query(
                "INSERT INTO origins (id, pool_id, position, address, enabled, weight, priority, health_check)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            )
            .bind((origin.id != 0).then_some(origin.id))
            .bind(id)
            .bind(position as i64)
            .bind(origin.address.to_string())
            .bind(origin.enabled as i64)
            .bind(origin.weight as i64)
            .bind(origin.priority as i64)
            .bind(check)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        }
        self.commit(tx, zone_id).await?;
        Ok(stored)
    }

    pub async fn delete_pool(&self, zone_id: i64, serial: u32, id: i64) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        set_serial(&mut tx, zone_id, serial).await?;
        let done = sqlx::query("DELETE FROM pools WHERE id = ? AND zone_id = ?")
            .bind(id)
            .bind(zone_id)
            .execute(&mut *tx)
            .await?;
        self.commit(tx, zone_id).await?;
        Ok(done.rows_affected() > 0)
    }

    /// Writes a load balancer (new when its id is 0) and the zone's new serial; returns its id.
    pub async fn save_load_balancer(
        &self,
        zone_id: i64,
        serial: u32,
        zone: &Dname,
        lb: &LbConfig,
    ) -> Result<i64> {
        let spec = lb.to_spec(zone);
        let mut tx = self.pool.begin().await?;
        set_serial(&mut tx, zone_id, serial).await?;
        if lb.id != 0 {
            sqlx::query("DELETE FROM load_balancers WHERE id = ? AND zone_id = ?")
                .bind(lb.id)
                .bind(zone_id)
                .execute(&mut *tx)
                .await?;
        }
        let id: i64 = sqlx::query(
            "INSERT INTO load_balancers (id, zone_id, name, enabled, ttl, pools, rules, fallback, steering, locate_by, affinity)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind((lb.id != 0).then_some(lb.id))
        .bind(zone_id)
        .bind(lb.name.to_lowercase().as_wire())
        .bind(lb.enabled as i64)
        .bind(lb.ttl as i64)
        .bind(serde_json::to_string(&spec.pools).map_err(json_error)?)
        .bind(serde_json::to_string(&spec.rules).map_err(json_error)?)
        .bind(&spec.fallback)
        .bind(lb.steering.as_str())
        .bind(lb.locate_by.as_str())
        .bind(lb.affinity.as_str())
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        self.commit(tx, zone_id).await?;
        Ok(id)
    }

    pub async fn delete_load_balancer(&self, zone_id: i64, serial: u32, id: i64) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        set_serial(&mut tx, zone_id, serial).await?;
        let done = sqlx::query("DELETE FROM load_balancers WHERE id = ? AND zone_id = ?")
            .bind(id)
            .bind(zone_id)
            .execute(&mut *tx)
            .await?;
        self.commit(tx, zone_id).await?;
        Ok(done.rows_affected() > 0)
    }
}
