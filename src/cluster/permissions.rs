//! policy-server's own permissions, checked before its lists (setting `policyServerUser`).
//!
//! policy-server reads a list through a reflector that must sync before the host call
//! returns, and it retries a forbidden LIST inside the evaluation: without `list` on what the
//! policy reads, a write waits out the webhook's timeout and the user is shown
//! `context deadline exceeded`, the cause only in policy-server's log. So before the first
//! list of each resource, [`Checked`] asks the API server (a SubjectAccessReview, which
//! policy-server caches for 5 s) whether policy-server's user may list it in every namespace,
//! and refuses at once, naming the permission, when it may not: a pool whose lists are already
//! open is refused too, since its watches will not reopen.
//!
//! Only `list` is asked. A reflector is ready once its first LIST is in, so a missing `watch`
//! does not hold a write: policy-server re-lists after each failed watch, with backoff. Each
//! check is a host call on every write (0.2-0.5 ms cached: README, "Performance in the real
//! engine") and a round trip to the API server every 5 s, which a slow API server makes long
//! (`fault.bats`).

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::{Access, Kubernetes, Lookup, Permission};

/// What a reflector's first sync needs of a resource.
const VERB: &str = "list";

/// The prefix of a ServiceAccount's user name.
const SERVICE_ACCOUNT: &str = "system:serviceaccount:";

/// A Kubernetes user as a SubjectAccessReview names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    /// The groups the API server gives it: a ServiceAccount's are known from its name, so a
    /// binding to them counts as it does for policy-server.
    pub groups: Vec<String>,
}

impl User {
    /// `name` (`system:serviceaccount:NAMESPACE:NAME` for policy-server's ServiceAccount),
    /// with the groups the API server authenticates it in.
    pub fn named(name: &str) -> Self {
        let mut groups = Vec::new();
        if let Some((namespace, _)) = name
            .strip_prefix(SERVICE_ACCOUNT)
            .and_then(|rest| rest.split_once(':'))
        {
            groups.push("system:serviceaccounts".to_string());
            groups.push(format!("system:serviceaccounts:{namespace}"));
        }
        groups.push("system:authenticated".to_string());
        User {
            name: name.to_string(),
            groups,
        }
    }

    /// Why `name` cannot be policy-server's user, if it cannot.
    pub fn invalid(name: &str) -> Option<String> {
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            return Some(format!("{name:?} is not a Kubernetes user name"));
        }
        let rest = name.strip_prefix(SERVICE_ACCOUNT)?;
        let valid = rest.split_once(':').is_some_and(|(namespace, account)| {
            crate::keys::is_dns_label(namespace) && is_subdomain(account)
        });
        (!valid).then(|| {
            format!(
                "{name:?} is not a ServiceAccount's user (system:serviceaccount:NAMESPACE:NAME)"
            )
        })
    }
}

fn is_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(crate::keys::is_dns_label)
}

/// Why policy-server's reads cannot be trusted to answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    #[error(
        "policy-server's user {user} may not {permission}{reason}, so its lists cannot sync; grant it list and watch (deploy/policyserver.yaml)"
    )]
    Denied {
        user: String,
        permission: Permission,
        /// ` (the authorizer's reason)`, or empty.
        reason: String,
    },
    #[error(
        "policy-server's user {user} may not {permission}{reason}; grant it (deploy/policyserver.yaml)"
    )]
    SummaryDenied {
        user: String,
        permission: Permission,
        reason: String,
    },
    #[error("cannot check whether policy-server's user {user} may {permission}: {error}")]
    Unchecked {
        user: String,
        permission: Permission,
        error: String,
    },
}

/// A reader of the cluster that checks policy-server's permissions on a resource before it
/// first lists it, once per request.
pub struct Checked<'k> {
    k8s: &'k dyn Kubernetes,
    user: User,
    /// Per permission checked: the outcome.
    checked: RefCell<BTreeMap<Permission, Result<(), PermissionError>>>,
}

impl<'k> Checked<'k> {
    pub fn new(k8s: &'k dyn Kubernetes, user: &str) -> Self {
        Checked {
            k8s,
            user: User::named(user),
            checked: RefCell::default(),
        }
    }

    /// `Ok` when policy-server may list what `lookup` reads.
    pub fn check(&self, lookup: &Lookup) -> Result<(), PermissionError> {
        let (group, resource) = lookup.group_resource();
        self.check_permission(Permission {
            verb: VERB,
            group,
            resource,
        })
    }

    /// `Ok` when policy-server may do `permission`, asked once per request.
    fn check_permission(&self, permission: Permission) -> Result<(), PermissionError> {
        if let Some(known) = self.checked.borrow().get(&permission) {
            return known.clone();
        }
        let outcome = match self.k8s.can_i(&self.user, &permission) {
            Ok(Access { allowed: true, .. }) => Ok(()),
            Ok(Access { reason, .. }) => {
                let reason = Some(reason.trim())
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                let user = self.user.name.clone();
                Err(match permission.verb {
                    VERB => PermissionError::Denied {
                        user,
                        permission,
                        reason,
                    },
                    _ => PermissionError::SummaryDenied {
                        user,
                        permission,
                        reason,
                    },
                })
            }
            Err(error) => Err(PermissionError::Unchecked {
                user: self.user.name.clone(),
                permission,
                error,
            }),
        };
        self.checked
            .borrow_mut()
            .insert(permission, outcome.clone());
        outcome
    }
}

impl Kubernetes for Checked<'_> {
    fn list(
        &self,
        lookup: &Lookup,
        field_masks: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<u8>, String> {
        self.check(lookup).map_err(|e| e.to_string())?;
        self.k8s.list(lookup, field_masks)
    }

    fn pool_summary(&self, namespace: &str) -> Result<Vec<u8>, String> {
        self.check_permission(Permission {
            verb: "get",
            group: crate::summary::GROUP,
            resource: crate::summary::RESOURCE,
        })
        .map_err(|e| e.to_string())?;
        self.k8s.pool_summary(namespace)
    }

    fn can_i(&self, user: &User, permission: &Permission) -> Result<Access, String> {
        self.k8s.can_i(user, permission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::service_account(
        "system:serviceaccount:kubewarden:policy-server-x",
        &["system:serviceaccounts", "system:serviceaccounts:kubewarden", "system:authenticated"]
    )]
    #[case::plain_user("policy-server", &["system:authenticated"])]
    fn a_users_groups_are_those_the_api_server_gives_it(
        #[case] name: &str,
        #[case] groups: &[&str],
    ) {
        assert_eq!(User::named(name).groups, groups);
    }

    #[rstest]
    #[case::service_account("system:serviceaccount:kubewarden:policy-server-x", None)]
    #[case::plain_user("jane@example.com", None)]
    #[case::empty("", Some("\"\" is not a Kubernetes user name"))]
    #[case::space("policy server", Some("is not a Kubernetes user name"))]
    #[case::no_account(
        "system:serviceaccount:kubewarden",
        Some("is not a ServiceAccount's user (system:serviceaccount:NAMESPACE:NAME)")
    )]
    #[case::bad_namespace(
        "system:serviceaccount:Kube_Warden:ps",
        Some("is not a ServiceAccount")
    )]
    fn a_user_name_is_checked(#[case] name: &str, #[case] problem: Option<&str>) {
        match (User::invalid(name), problem) {
            (None, None) => {}
            (Some(got), Some(want)) => assert!(got.contains(want), "{got:?} lacks {want:?}"),
            (got, want) => panic!("{name:?}: {got:?}, expected {want:?}"),
        }
    }
}
