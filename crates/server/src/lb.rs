//! Load balancers and pools (SPEC §7) in the control plane: the [`Manager`] methods that
//! validate, store and publish them, the zone rules they add (limits, references, ownership of
//! A/AAAA/CNAME at a load balancer's name → 409), and their API routes.
//!
//! Origins with checks are health-checked like steered records; their state changes are kept
//! as health events under record id `-origin_id` (origin ids and record ids are both positive,
//! so the two never meet).

use std::net::IpAddr;

use api::Role;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use model::ZoneConfig;
use model::lb::{LbConfig, LoadBalancerSpec, PoolConfig, PoolSpec};
use model::steering::Validate as _;
use model::zone::next_serial;

use crate::auth::Principal;
use crate::http::{ApiPath, ApiResult, AppState, JsonBody};
use crate::manage::{CheckedRecord, ManageError, Manager, today_yyyymmdd};

type Result<T> = std::result::Result<T, ManageError>;

/// Checks the zone's pools and load balancers with its records: a conflict with other data
/// (a record at a load balancer's name, a name taken, a limit reached) is a 409, a bad
/// reference a 422.
pub fn check_zone(zone: &ZoneConfig) -> Result<()> {
    let problems = model::lb::check_zone(zone);
    if let Some(conflict) = problems.iter().find(|p| p.conflict) {
        return Err(ManageError::Conflict {
            message: conflict.error.message.clone(),
            field: Some(conflict.error.field.clone()).filter(|f| !f.is_empty()),
        });
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ManageError::Invalid(
            problems.into_iter().map(|p| p.error).collect(),
        ))
    }
}

/// The origins of a zone's pools that have a check, as the health runner wants them.
pub fn checked_origins(zone: &ZoneConfig) -> Vec<CheckedRecord> {
    let mut out = Vec::new();
    for pool in &zone.pools {
        for origin in &pool.origins {
            let (Some(check), Some(key), Some(host)) =
                (&origin.check, origin.check_key(), origin.check_host())
            else {
                continue;
            };
            out.push(CheckedRecord {
                key,
                record_id: -origin.id,
                address: origin.address,
                host,
                check: check.clone(),
            });
        }
    }
    out
}

fn unknown() -> api::HealthInfo {
    api::HealthInfo {
        state: "unknown".into(),
        since: None,
        reason: None,
        status: None,
        latency_ms: None,
        checked: None,
    }
}

impl Manager {
    /// Sets this server's PoP in the answer snapshot.
    pub fn set_pop(&self, pop: std::sync::Arc<model::snapshot::Pop>) {
        self.snapshot.rcu(|current| current.with_pop(pop.clone()));
    }

    fn api_pool(&self, pool: &PoolConfig) -> api::Pool {
        let health = self.health.read().ok();
        api::Pool {
            id: pool.id,
            name: pool.name.clone(),
            enabled: pool.enabled,
            algorithm: pool.algorithm.as_str().into(),
            location: pool.location.map(|l| l.to_api()),
            origins: pool
                .origins
                .iter()
                .map(|origin| {
                    let state = origin.check_key().map(|key| {
                        health
                            .as_ref()
                            .and_then(|h| h.get(&key).cloned())
                            .unwrap_or_else(unknown)
                    });
                    // SPEC §7: unknown and no check count as healthy; shown as they are.
                    let shown = match state.as_ref().map(|s| s.state.as_str()) {
                        None | Some("up") => "healthy",
                        Some("down") => "unhealthy",
                        Some(_) => "unknown",
                    };
                    api::Origin {
                        id: origin.id,
                        address: origin.address.to_string(),
                        enabled: origin.enabled,
                        weight: origin.weight,
                        priority: origin.priority,
                        check: origin.check.as_ref().map(|c| c.to_spec()),
                        health: shown.into(),
                        check_state: state,
                    }
                })
                .collect(),
        }
    }

    fn api_lb(zone: &ZoneConfig, lb: &LbConfig) -> api::LoadBalancer {
        api::LoadBalancer {
            id: lb.id,
            fqdn: lb.name.to_string(),
            spec: lb.to_spec(&zone.name),
        }
    }

    /// Runs `edit` on a copy of the zone, checks the result, stores it with `save` and
    /// publishes it: the pattern of every pool and load balancer change.
    async fn change_lb<T>(
        &self,
        zone: &str,
        edit: impl FnOnce(&mut ZoneConfig) -> Result<T>,
        save: impl AsyncFnOnce(&store::Store, &mut ZoneConfig, &T) -> Result<()>,
    ) -> Result<(ZoneConfig, T)> {
        let key = Manager::zone_key(zone)?;
        let mut zones = self.zones.lock().await;
        let mut next = self.full_zone(&key, &zones).await?;
        let old_serial = next.soa.serial;
        let extra = edit(&mut next)?;
        check_zone(&next)?;
        next.soa.serial = next_serial(old_serial, today_yyyymmdd());
        save(self.store(), &mut next, &extra).await?;
        self.publish(&next);
        zones.insert(key, crate::manage::HeldZone::of(&next));
        Ok((next, extra))
    }

    async fn with_zone<T>(
        &self,
        zone: &str,
        read: impl FnOnce(&ZoneConfig) -> Result<T>,
    ) -> Result<T> {
        let key = Manager::zone_key(zone)?;
        let zones = self.zones.lock().await;
        let zone = zones
            .get(&key)
            .ok_or_else(|| ManageError::NotFound(format!("no zone {key}")))?;
        read(&zone.config)
    }

    pub async fn list_pools(&self, zone: &str) -> Result<Vec<api::Pool>> {
        self.with_zone(zone, |z| {
            Ok(z.pools.iter().map(|p| self.api_pool(p)).collect())
        })
        .await
    }

    pub async fn pool(&self, zone: &str, id: &str) -> Result<api::Pool> {
        self.with_zone(zone, |z| Ok(self.api_pool(find_pool(z, id)?)))
            .await
    }

    /// Saves a pool: new with `id` None, else in place of pool `id` (an id or a name).
    pub async fn save_pool(
        &self,
        zone: &str,
        id: Option<&str>,
        spec: &PoolSpec,
    ) -> Result<api::Pool> {
        let (next, idx) = self
            .change_lb(
                zone,
                |zone| {
                    let mut pool = spec.validate("").map_err(ManageError::Invalid)?;
                    match id {
                        None => {
                            zone.pools.push(pool);
                            Ok(zone.pools.len() - 1)
                        }
                        Some(id) => {
                            let old = find_pool(zone, id)?.clone();
                            // Renaming a pool that load balancers name would break them.
                            if old.name != pool.name
                                && let Some(lb) = zone
                                    .load_balancers
                                    .iter()
                                    .find(|lb| lb.pool_refs().iter().any(|(_, p)| *p == old.name))
                            {
                                return Err(ManageError::Conflict {
                                    message: format!(
                                        "pool {} is used by the load balancer {}; it cannot be renamed",
                                        old.name, lb.name
                                    ),
                                    field: Some("name".into()),
                                });
                            }
                            pool.id = old.id;
                            // An origin that stays keeps its id and so its health history.
                            for origin in &mut pool.origins {
                                if let Some(same) =
                                    old.origins.iter().find(|o| o.address == origin.address)
                                {
                                    origin.id = same.id;
                                }
                            }
                            let idx = zone.pools.iter().position(|p| p.id == old.id).unwrap_or(0);
                            zone.pools[idx] = pool;
                            Ok(idx)
                        }
                    }
                },
                async |store, zone, idx| {
                    let stored = store.save_pool(zone.id, zone.soa.serial, &zone.pools[*idx]).await?;
                    zone.pools[*idx] = stored;
                    Ok(())
                },
            )
            .await?;
        tracing::info!(zone = %next.name, pool = %next.pools[idx].name, "pool saved");
        Ok(self.api_pool(&next.pools[idx]))
    }

    pub async fn delete_pool(&self, zone: &str, id: &str) -> Result<()> {
        self.change_lb(
            zone,
            |zone| {
                let pool = find_pool(zone, id)?.clone();
                if let Some(lb) = zone
                    .load_balancers
                    .iter()
                    .find(|lb| lb.pool_refs().iter().any(|(_, p)| *p == pool.name))
                {
                    return Err(ManageError::Conflict {
                        message: format!(
                            "pool {} is used by the load balancer {}",
                            pool.name, lb.name
                        ),
                        field: None,
                    });
                }
                zone.pools.retain(|p| p.id != pool.id);
                Ok(pool.id)
            },
            async |store, zone, pool_id| {
                store
                    .delete_pool(zone.id, zone.soa.serial, *pool_id)
                    .await?;
                Ok(())
            },
        )
        .await?;
        Ok(())
    }

    /// The check targets of a pool's origins (for "Run health checks").
    pub async fn pool_targets(&self, zone: &str, id: &str) -> Result<Vec<::health::probe::Target>> {
        self.with_zone(zone, |z| {
            let pool = find_pool(z, id)?;
            Ok(pool
                .origins
                .iter()
                .filter_map(|origin| {
                    Some(::health::probe::Target {
                        address: origin.address,
                        host: origin.check_host()?,
                        config: origin.check.clone()?,
                    })
                })
                .collect())
        })
        .await
    }

    pub async fn list_load_balancers(&self, zone: &str) -> Result<Vec<api::LoadBalancer>> {
        self.with_zone(zone, |z| {
            Ok(z.load_balancers
                .iter()
                .map(|lb| Manager::api_lb(z, lb))
                .collect())
        })
        .await
    }

    pub async fn load_balancer(&self, zone: &str, id: &str) -> Result<api::LoadBalancer> {
        self.with_zone(zone, |z| Ok(Manager::api_lb(z, find_lb(z, id)?)))
            .await
    }

    /// Saves a load balancer: new with `id` None, else in place of `id` (an id or a name).
    pub async fn save_load_balancer(
        &self,
        zone: &str,
        id: Option<&str>,
        spec: &LoadBalancerSpec,
    ) -> Result<api::LoadBalancer> {
        let (next, idx) = self
            .change_lb(
                zone,
                |zone| {
                    let mut lb =
                        model::lb::validate_lb(spec, &zone.name).map_err(ManageError::Invalid)?;
                    match id {
                        None => {
                            zone.load_balancers.push(lb);
                            Ok(zone.load_balancers.len() - 1)
                        }
                        Some(id) => {
                            let old_id = find_lb(zone, id)?.id;
                            lb.id = old_id;
                            let idx = zone
                                .load_balancers
                                .iter()
                                .position(|l| l.id == old_id)
                                .unwrap_or(0);
                            zone.load_balancers[idx] = lb;
                            Ok(idx)
                        }
                    }
                },
                async |store, zone, idx| {
                    let id = store
                        .save_load_balancer(
                            zone.id,
                            zone.soa.serial,
                            &zone.name,
                            &zone.load_balancers[*idx],
                        )
                        .await?;
                    zone.load_balancers[*idx].id = id;
                    Ok(())
                },
            )
            .await?;
        let lb = &next.load_balancers[idx];
        tracing::info!(zone = %next.name, name = %lb.name, "load balancer saved");
        Ok(Manager::api_lb(&next, lb))
    }

    pub async fn delete_load_balancer(&self, zone: &str, id: &str) -> Result<()> {
        self.change_lb(
            zone,
            |zone| {
                let lb_id = find_lb(zone, id)?.id;
                zone.load_balancers.retain(|l| l.id != lb_id);
                Ok(lb_id)
            },
            async |store, zone, lb_id| {
                store
                    .delete_load_balancer(zone.id, zone.soa.serial, *lb_id)
                    .await?;
                Ok(())
            },
        )
        .await?;
        Ok(())
    }
}

/// A pool by id or by name.
fn find_pool<'a>(zone: &'a ZoneConfig, id: &str) -> Result<&'a PoolConfig> {
    let by_id = id.parse::<i64>().ok();
    zone.pools
        .iter()
        .find(|p| Some(p.id) == by_id || p.name == id)
        .ok_or_else(|| ManageError::NotFound(format!("no pool {id} in {}", zone.name)))
}

/// A load balancer by id or by name (relative or absolute).
fn find_lb<'a>(zone: &'a ZoneConfig, id: &str) -> Result<&'a LbConfig> {
    let by_id = id.parse::<i64>().ok();
    let by_name = model::Dname::parse(id, &zone.name).ok();
    zone.load_balancers
        .iter()
        .find(|l| {
            Some(l.id) == by_id || by_name.as_ref().is_some_and(|n| n.eq_ignore_case(&l.name))
        })
        .ok_or_else(|| ManageError::NotFound(format!("no load balancer {id} in {}", zone.name)))
}

// ---- API ------------------------------------------------------------------------------------

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/zones/{zone}/pools",
            get(list_pools).post(create_pool),
        )
        .route(
            "/api/v1/zones/{zone}/pools/{id}",
            get(show_pool).put(update_pool).delete(delete_pool),
        )
        .route("/api/v1/zones/{zone}/pools/{id}/check", post(check_pool))
        .route(
            "/api/v1/zones/{zone}/load-balancers",
            get(list_lbs).post(create_lb),
        )
        .route(
            "/api/v1/zones/{zone}/load-balancers/{id}",
            get(show_lb).put(update_lb).delete(delete_lb),
        )
}

async fn list_pools(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
) -> ApiResult<Json<Vec<api::Pool>>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.manager.list_pools(&zone).await?))
}

async fn create_pool(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
    JsonBody(body): JsonBody<PoolSpec>,
) -> ApiResult<(StatusCode, Json<api::Pool>)> {
    who.require(Role::Editor)?;
    Ok((
        StatusCode::CREATED,
        Json(state.manager.save_pool(&zone, None, &body).await?),
    ))
}

async fn show_pool(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, String)>,
) -> ApiResult<Json<api::Pool>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.manager.pool(&zone, &id).await?))
}

async fn update_pool(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, String)>,
    JsonBody(body): JsonBody<PoolSpec>,
) -> ApiResult<Json<api::Pool>> {
    who.require(Role::Editor)?;
    Ok(Json(
        state.manager.save_pool(&zone, Some(&id), &body).await?,
    ))
}

async fn delete_pool(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    who.require(Role::Editor)?;
    state.manager.delete_pool(&zone, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Runs the checks of a pool's origins now, concurrently, without saving ("Run health checks").
async fn check_pool(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, String)>,
) -> ApiResult<Json<Vec<api::OriginCheck>>> {
    who.require(Role::Editor)?;
    let targets = state.manager.pool_targets(&zone, &id).await?;
    let mut tasks = Vec::new();
    for target in targets {
        let prober = state.prober.clone();
        let address: IpAddr = target.address;
        tasks.push((
            address,
            tokio::spawn(async move { crate::health::test_check(&prober, target).await }),
        ));
    }
    let mut out = Vec::new();
    for (address, task) in tasks {
        let result = task
            .await
            .map_err(|e| crate::http::ApiError::Internal(format!("check of {address}: {e}")))?;
        out.push(api::OriginCheck {
            address: address.to_string(),
            result,
        });
    }
    Ok(Json(out))
}

async fn list_lbs(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
) -> ApiResult<Json<Vec<api::LoadBalancer>>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.manager.list_load_balancers(&zone).await?))
}

async fn create_lb(
    State(state): State<AppState>,
    who: Principal,
    ApiPath(zone): ApiPath<String>,
    JsonBody(body): JsonBody<LoadBalancerSpec>,
) -> ApiResult<(StatusCode, Json<api::LoadBalancer>)> {
    who.require(Role::Editor)?;
    Ok((
        StatusCode::CREATED,
        Json(state.manager.save_load_balancer(&zone, None, &body).await?),
    ))
}

async fn show_lb(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, String)>,
) -> ApiResult<Json<api::LoadBalancer>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.manager.load_balancer(&zone, &id).await?))
}

async fn update_lb(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, String)>,
    JsonBody(body): JsonBody<LoadBalancerSpec>,
) -> ApiResult<Json<api::LoadBalancer>> {
    who.require(Role::Editor)?;
    Ok(Json(
        state
            .manager
            .save_load_balancer(&zone, Some(&id), &body)
            .await?,
    ))
}

async fn delete_lb(
    State(state): State<AppState>,
    who: Principal,
    ApiPath((zone, id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    who.require(Role::Editor)?;
    state.manager.delete_load_balancer(&zone, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
