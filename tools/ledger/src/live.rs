//! A live cluster through the user's kubeconfig (kube-rs), read-only: every lookup of the
//! policy becomes a LIST of its resource (namespaced or cluster-wide, with its label and
//! field selectors), page by page, and its items are answered as the Kubewarden host answers
//! them (host-sim: the reflector's stripping, field masks, the list envelope). Nothing here
//! knows the lookups one by one: it reads [`Lookup::resource`], [`Lookup::namespace`] and the
//! selectors, so a new lookup needs no change here.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};
use host_sim::ObjectStore;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, TypeMeta};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;
use tenant_reservation_policy::cluster::{Kubernetes, Lookup};

use crate::state::Stored;

/// Items per LIST page: a large cluster's HelmReleases come in several pages.
const PAGE: u32 = 500;

/// The cluster a kubeconfig points at.
pub struct Live {
    // A current-thread runtime: the ledger's lookups are sequential, and the policy's
    // `Kubernetes` trait is synchronous.
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl Live {
    /// Connects through `kubeconfig` (else `$KUBECONFIG` or `~/.kube/config`), in `context`
    /// (else its current context). Nothing is requested yet.
    pub fn connect(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Live> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the I/O runtime")?;
        let options = KubeConfigOptions {
            context: context.map(str::to_string),
            ..KubeConfigOptions::default()
        };
        let config = runtime.block_on(async {
            match kubeconfig {
                Some(path) => {
                    let file = Kubeconfig::read_from(path)
                        .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
                    Config::from_custom_kubeconfig(file, &options)
                        .await
                        .with_context(|| format!("kubeconfig {}", path.display()))
                }
                None => Config::from_kubeconfig(&options)
                    .await
                    .context("cannot load the kubeconfig ($KUBECONFIG or ~/.kube/config)"),
            }
        })?;
        // Client::try_from spawns nothing, but builds its connector inside the runtime.
        let client = runtime.block_on(async { Client::try_from(config) })?;
        Ok(Live { runtime, client })
    }

    /// Every object `lookup` lists, whole, from every page.
    async fn list_all(&self, lookup: &Lookup) -> Result<Vec<Value>, String> {
        let (api_version, kind) = lookup.resource();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        // The plural is the kind's lowercase with an `s` (helmreleases, applicationdefinitions,
        // virtualmachineclusterinstancetypes): no discovery round trip.
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        let api: Api<DynamicObject> = match lookup.namespace() {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        let mut params = ListParams::default().limit(PAGE);
        if let Some(labels) = lookup.label_selector() {
            params = params.labels(&labels);
        }
        if let Some(fields) = lookup.field_selector() {
            params = params.fields(&fields);
        }
        let mut items = Vec::new();
        loop {
            let page = api.list(&params).await.map_err(|e| refused(lookup, e))?;
            for mut object in page.items {
                // The API server names the type of each item; a proxy that drops it would
                // otherwise leave objects the store cannot place.
                object.types.get_or_insert_with(|| TypeMeta {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                });
                items.push(serde_json::to_value(object).map_err(|e| e.to_string())?);
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
        Ok(items)
    }
}

impl Kubernetes for Live {
    fn list(&self, lookup: &Lookup, field_masks: &BTreeSet<String>) -> Result<Vec<u8>, String> {
        let items = self.runtime.block_on(self.list_all(lookup))?;
        // The API server has applied the selectors; host-sim applies them again (a no-op) and
        // shapes the answer exactly as the host does.
        let store = ObjectStore::new(items)
            .map_err(|e| format!("{}: the cluster's answer: {e}", lookup.describe()))?;
        Stored(store).list(lookup, field_masks)
    }
}

/// A failed LIST, naming the resource and what the user can do about it.
fn refused(lookup: &Lookup, error: kube::Error) -> String {
    let what = lookup.describe();
    match error {
        kube::Error::Api(status) => {
            let detail = if status.message.is_empty() {
                status.reason.clone()
            } else {
                status.message.clone()
            };
            match status.code {
                401 => format!(
                    "the kubeconfig's user is not authenticated to list {what}: 401 Unauthorized: {detail}"
                ),
                403 => format!(
                    "the kubeconfig's user may not list {what}: 403 Forbidden: {detail} (the ledger needs list on applicationdefinitions, helmreleases and virtualmachineclusterinstancetypes)"
                ),
                404 => format!(
                    "the cluster does not serve {what}: 404 Not Found: {detail} (is its CRD installed?)"
                ),
                code => format!("cannot list {what}: {code}: {detail}"),
            }
        }
        other => format!("cannot list {what}: {other}"),
    }
}
