//! A live cluster through the user's kubeconfig (kube-rs), read-only: every lookup of the
//! policy becomes a LIST of its resource (namespaced or cluster-wide, with its label and
//! field selectors), page by page, and its items are answered as the Kubewarden host answers
//! them (host-sim: the reflector's stripping, field masks, the list envelope). Nothing here
//! knows the lookups one by one: it reads [`Lookup::resource`], [`Lookup::namespace`] and the
//! selectors, so a new lookup needs no change here.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use host_sim::ObjectStore;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams, TypeMeta,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;
use tenant_reservation_policy::cluster::{Kubernetes, Lookup};

use crate::proxy;
use crate::state::Stored;

/// Items per LIST page unless told (kubectl's `--chunk-size` default).
pub const CHUNK_SIZE: u32 = 500;

/// How to reach the cluster, with kubectl's flags: the kubeconfig and context, impersonation,
/// the request timeout and the LIST chunk size.
#[derive(Clone, Debug)]
pub struct Connection {
    /// The kubeconfig (else `$KUBECONFIG`, else `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (else its current context).
    pub context: Option<String>,
    /// `--as`: the user to impersonate.
    pub as_user: Option<String>,
    /// `--as-group`: the groups to impersonate.
    pub as_groups: Vec<String>,
    /// `--request-timeout`: how long one request may take; `None` waits as long as the
    /// server does (kubectl's `0`).
    pub request_timeout: Option<Duration>,
    /// `--chunk-size`: items per LIST page; 0 lists in one response.
    pub chunk_size: u32,
}

/// The `proxy-url` of the cluster the context (else the current one) names.
fn declared_proxy(file: &Kubeconfig, context: Option<&str>) -> Option<String> {
    let context = context.or(file.current_context.as_deref())?;
    let cluster = file
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?
        .cluster
        .clone();
    file.clusters
        .iter()
        .find(|c| c.name == cluster)?
        .cluster
        .as_ref()?
        .proxy_url
        .clone()
}

/// kubectl's defaults: the kubeconfig's current context as itself, no timeout of its own,
/// 500 items a page.
impl Default for Connection {
    fn default() -> Self {
        Connection {
            kubeconfig: None,
            context: None,
            as_user: None,
            as_groups: Vec::new(),
            request_timeout: None,
            chunk_size: CHUNK_SIZE,
        }
    }
}

/// The cluster a kubeconfig points at.
pub struct Live {
    // A current-thread runtime: the ledger's lookups are sequential, and the policy's
    // `Kubernetes` trait is synchronous.
    runtime: tokio::runtime::Runtime,
    client: Client,
    /// The API server, as errors name it.
    server: String,
    /// The context's namespace (kubectl's default for `-n`).
    default_namespace: String,
    chunk_size: u32,
}

impl Live {
    /// Connects as `connection` says. Nothing is requested yet.
    pub fn connect(connection: &Connection) -> Result<Live> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the I/O runtime")?;
        let options = KubeConfigOptions {
            context: connection.context.clone(),
            ..KubeConfigOptions::default()
        };
        let file = match &connection.kubeconfig {
            Some(path) => Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?,
            None => Kubeconfig::read()
                .context("cannot load the kubeconfig ($KUBECONFIG or ~/.kube/config)")?,
        };
        let declared_proxy = declared_proxy(&file, connection.context.as_deref());
        let mut config = runtime
            .block_on(Config::from_custom_kubeconfig(file, &options))
            .context(match &connection.kubeconfig {
                Some(path) => format!("kubeconfig {}", path.display()),
                None => "the kubeconfig ($KUBECONFIG or ~/.kube/config)".to_string(),
            })?;
        config.proxy_url =
            proxy::proxy_for(&config.cluster_url, declared_proxy.as_deref(), |name| {
                std::env::var(name).ok()
            })?;
        if let Some(user) = &connection.as_user {
            config.auth_info.impersonate = Some(user.clone());
        }
        if !connection.as_groups.is_empty() {
            if config.auth_info.impersonate.is_none() {
                // As kubectl: groups alone do not say who is acting.
                bail!("--as-group needs --as (the user to impersonate)");
            }
            config.auth_info.impersonate_groups = Some(connection.as_groups.clone());
        }
        // kubectl's --request-timeout bounds each request; kube-rs's defaults (295 s read)
        // stay when it is not given.
        if let Some(timeout) = connection.request_timeout {
            config.connect_timeout = Some(timeout);
            config.read_timeout = Some(timeout);
            config.write_timeout = Some(timeout);
        }
        let default_namespace = config.default_namespace.clone();
        let server = config.cluster_url.to_string();
        let server = server.trim_end_matches('/').to_string();
        // Client::try_from spawns nothing, but builds its connector inside the runtime.
        let client = runtime
            .block_on(async { Client::try_from(config) })
            .with_context(|| format!("cannot make a client for {server}"))?;
        Ok(Live {
            runtime,
            client,
            server,
            default_namespace,
            chunk_size: connection.chunk_size,
        })
    }

    /// The context's namespace, `default` when it names none (as kubectl's).
    pub fn default_namespace(&self) -> Option<&str> {
        Some(self.default_namespace.as_str()).filter(|ns| !ns.is_empty())
    }

    /// The API server's URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Every ClusterAdmissionPolicy of the cluster, whole: the deployed policy's settings.
    pub fn cluster_admission_policies(&self) -> Result<Vec<Value>, ListError> {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
            "policies.kubewarden.io",
            "v1",
            "ClusterAdmissionPolicy",
        ));
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let items = self
            .runtime
            .block_on(self.pages(&api, ListParams::default()))?;
        items
            .into_iter()
            .map(|o| serde_json::to_value(o).map_err(|e| ListError::other(e.to_string())))
            .collect()
    }

    /// The kinds `group_version` serves, from discovery (which every authenticated user may
    /// read): (kind, plural) of each resource, subresources left out.
    pub fn served_kinds(&self, group_version: &str) -> Result<Vec<(String, String)>, ListError> {
        let list = self
            .runtime
            .block_on(self.client.list_api_group_resources(group_version))?;
        Ok(list
            .resources
            .into_iter()
            .filter(|r| !r.name.contains('/'))
            .map(|r| (r.kind, r.name))
            .collect())
    }

    /// Every object of `resource` (api version, kind, plural), whole: in `namespace`, or
    /// cluster-wide.
    pub fn list_objects(
        &self,
        (api_version, kind, plural): (&str, &str, &str),
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, ListError> {
        let resource = api_resource(api_version, kind, plural);
        let api = match namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        let objects = self
            .runtime
            .block_on(self.pages(&api, ListParams::default()))?;
        typed_values(objects, api_version, kind).map_err(|e| ListError::other(e.to_string()))
    }

    /// One object by name; `None` when the server has none.
    pub fn get_namespaced(
        &self,
        (api_version, kind, plural): (&str, &str, &str),
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, ListError> {
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            namespace,
            &api_resource(api_version, kind, plural),
        );
        let object = self.runtime.block_on(api.get_opt(name))?;
        object
            .map(|o| serde_json::to_value(o).map_err(|e| ListError::other(e.to_string())))
            .transpose()
    }

    /// Whether the user (as impersonated) may `verb` `group`/`resource` in every namespace,
    /// as `kubectl auth can-i VERB RESOURCE -A` asks it (a SelfSubjectAccessReview, which
    /// every authenticated user may create).
    pub fn may_cluster_wide(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
    ) -> Result<bool, ListError> {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let api: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let answer = self
            .runtime
            .block_on(api.create(&PostParams::default(), &review))?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }

    /// Every item of a LIST, page by page (`--chunk-size`).
    async fn pages(
        &self,
        api: &Api<DynamicObject>,
        mut params: ListParams,
    ) -> Result<Vec<DynamicObject>, ListError> {
        if self.chunk_size > 0 {
            params = params.limit(self.chunk_size);
        }
        let mut items = Vec::new();
        loop {
            let page = api.list(&params).await.map_err(ListError::from)?;
            items.extend(page.items);
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
        Ok(items)
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
        let mut params = ListParams::default();
        if let Some(labels) = lookup.label_selector() {
            params = params.labels(&labels);
        }
        if let Some(fields) = lookup.field_selector() {
            params = params.fields(&fields);
        }
        let pages = self
            .pages(&api, params)
            .await
            .map_err(|e| refused(&self.server, lookup, e))?;
        typed_values(pages, api_version, kind).map_err(|e| e.to_string())
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

/// The items of a LIST as JSON, each with its type: the API server names the type of each
/// item, but a proxy that drops it would leave objects the store cannot place.
fn typed_values(
    objects: Vec<DynamicObject>,
    api_version: &str,
    kind: &str,
) -> serde_json::Result<Vec<Value>> {
    objects
        .into_iter()
        .map(|mut object| {
            object.types.get_or_insert_with(|| TypeMeta {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            });
            serde_json::to_value(object)
        })
        .collect()
}

/// The resource `plural` of kind `kind` in `api_version` (`group/version`, or `v1`).
fn api_resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource {
        group: group.to_string(),
        version: version.to_string(),
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        plural: plural.to_string(),
    }
}

/// A failed LIST: the API server's status, or what kept the request from it.
#[derive(Debug)]
pub enum ListError {
    /// The API server answered with an error status.
    Status { code: u16, detail: String },
    /// No answer: connection, TLS, timeout, proxy.
    Other(String),
}

impl ListError {
    fn other(message: String) -> ListError {
        ListError::Other(message)
    }

    /// The HTTP status the API server answered with, if it answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            ListError::Status { code, .. } => Some(*code),
            ListError::Other(_) => None,
        }
    }
}

impl From<kube::Error> for ListError {
    fn from(error: kube::Error) -> ListError {
        match error {
            kube::Error::Api(status) => ListError::Status {
                code: status.code,
                detail: if status.message.is_empty() {
                    status.reason.clone()
                } else {
                    status.message.clone()
                },
            },
            other => ListError::Other(format!("{other}")),
        }
    }
}

impl std::fmt::Display for ListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListError::Status { code, detail } => write!(f, "{code}: {detail}"),
            ListError::Other(message) => f.write_str(message),
        }
    }
}

/// A failed LIST, naming the server, the resource and what the user can do about it.
fn refused(server: &str, lookup: &Lookup, error: ListError) -> String {
    let what = lookup.describe();
    match error {
        ListError::Status { code: 401, detail } => format!(
            "{server}: the user is not authenticated to list {what}: 401 Unauthorized: {detail}"
        ),
        ListError::Status { code: 403, detail } => format!(
            "{server}: the user may not list {what}: 403 Forbidden: {detail} (the ledger needs list on {NEEDED}; examples/plugin/rbac.yaml grants it; a tenant's user reads the tenant's own pools with -n TENANT-NAMESPACE)"
        ),
        ListError::Status { code: 404, detail } => format!(
            "{server}: the cluster does not serve {what}: 404 Not Found: {detail} (is its CRD installed?)"
        ),
        ListError::Status { code, detail } => {
            format!("{server}: cannot list {what}: {code}: {detail}")
        }
        ListError::Other(message) => format!("{server}: cannot list {what}: {message}"),
    }
}

/// What the ledger lists, cluster-wide.
pub const NEEDED: &str = "applicationdefinitions.cozystack.io, helmreleases.helm.toolkit.fluxcd.io and virtualmachineclusterinstancetypes.instancetype.kubevirt.io (and clusteradmissionpolicies.policies.kubewarden.io to read the deployed settings)";
