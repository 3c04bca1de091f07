{{/*
dovetail.validate fails rendering for a missing settings.clusterName, an
unknown setting, and every value of the peer's chart dovetail does not
implement when it is set to anything but its default. Included by the
Deployment, so `helm template` and `helm install` both check.
*/}}
{{- define "dovetail.validate" -}}
{{- $s := .Values.settings -}}
{{- if not $s.clusterName -}}
{{- fail "settings.clusterName is required: the name of the EKS cluster dovetail manages (--set settings.clusterName=<name>)" -}}
{{- end -}}
{{- if and (hasPrefix "arn:" (toString $s.interruptionQueue)) -}}
{{- fail (printf "settings.interruptionQueue: %q is an ARN; give the queue's NAME (the last part of the ARN)" $s.interruptionQueue) -}}
{{- end -}}
{{- if and $s.clusterEndpoint (not (hasPrefix "https://" (toString $s.clusterEndpoint))) -}}
{{- fail (printf "settings.clusterEndpoint: %q must be an https URL (or empty: discovered)" $s.clusterEndpoint) -}}
{{- end -}}
{{- $supported := list "clusterName" "clusterEndpoint" "clusterCABundle" "interruptionQueue" "batchMaxDuration" "batchIdleDuration" "kubeClientQPS" "kubeClientBurst" "featureGates" "awsFeatureGates" "vmMemoryOverheadPercent" "reservedENIs" "isolatedVPC" "eksControlPlane" "disableDryRun" "amiRefreshInterval" "subnetRefreshInterval" "securityGroupRefreshInterval" -}}
{{- /* The peer's settings dovetail does not implement: accepted at the peer's default only (null counts as the default). */ -}}
{{- $defaultsOnly := dict "preferencePolicy" "Respect" "minValuesPolicy" "Strict" "enableZonalShift" "false" "enableDRA" "false" "ignoreDRARequests" "true" "legacyNodeRepair" "false" "disableClusterStateObservability" "false" -}}
{{- range $k, $v := $s -}}
{{- if hasKey $defaultsOnly $k -}}
{{- if and (not (kindIs "invalid" $v)) (ne (toString $v) (get $defaultsOnly $k)) -}}
{{- fail (printf "settings.%s: dovetail does not implement this setting of the peer's chart; only its default (%s) is accepted, got %v" $k (get $defaultsOnly $k) $v) -}}
{{- end -}}
{{- else if not (has $k $supported) -}}
{{- fail (printf "settings.%s: not a setting dovetail knows (supported: %s; accepted at the peer's default only: %s)" $k (join ", " $supported) (join ", " (keys $defaultsOnly | sortAlpha))) -}}
{{- end -}}
{{- end -}}
{{- range $k := list "amiRefreshInterval" "subnetRefreshInterval" "securityGroupRefreshInterval" "batchMaxDuration" "batchIdleDuration" -}}
{{- $d := toString (index $s $k) -}}
{{- if not (regexMatch "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$" $d) -}}
{{- fail (printf "settings.%s: %q is not a duration such as 1m or 90s" $k $d) -}}
{{- end -}}
{{- end -}}
{{- range $p := .Values.logOutputPaths -}}
{{- if not (has $p (list "stdout" "stderr")) -}}
{{- fail (printf "logOutputPaths: %v: dovetail logs to stdout and/or stderr only" $p) -}}
{{- end -}}
{{- end -}}
{{- range $p := .Values.logErrorOutputPaths -}}
{{- if ne $p "stderr" -}}
{{- fail (printf "logErrorOutputPaths: %v: only stderr is accepted" $p) -}}
{{- end -}}
{{- end -}}
{{- if not (has (toString .Values.logLevel) (list "debug" "info" "warn" "error")) -}}
{{- fail (printf "logLevel: %v is not one of debug, info, warn, error" .Values.logLevel) -}}
{{- end -}}
{{- /* A top-level value this chart does not have is refused when set to anything but empty. */ -}}
{{- $known := list "nameOverride" "fullnameOverride" "additionalLabels" "additionalAnnotations" "replicas" "revisionHistoryLimit" "strategy" "imagePullPolicy" "imagePullSecrets" "serviceAccount" "leaderElection" "podDisruptionBudget" "podLabels" "podAnnotations" "podSecurityContext" "priorityClassName" "dnsPolicy" "dnsConfig" "hostNetwork" "schedulerName" "nodeSelector" "affinity" "topologySpreadConstraints" "tolerations" "controller" "logLevel" "service" "serviceMonitor" "settings" "webhook" "additionalClusterRoleRules" "extraVolumes" "initContainers" "logOutputPaths" "logErrorOutputPaths" "logEncoding" "global" "terminationGracePeriodSeconds" -}}
{{- range $k, $v := .Values -}}
{{- if and (not (has $k $known)) (not (empty $v)) -}}
{{- fail (printf "%s: not a value of dovetail's chart (see charts/dovetail/values.yaml and docs/install.md)" $k) -}}
{{- end -}}
{{- end -}}
{{- /* The peer's top-level values dovetail does not implement. */ -}}
{{- with .Values.webhook -}}
{{- if .enabled -}}
{{- fail "webhook.enabled: dovetail has no webhook (neither does the peer since v1.1); set it to false or remove it" -}}
{{- end -}}
{{- end -}}
{{- if .Values.additionalClusterRoleRules -}}
{{- fail "additionalClusterRoleRules: the controller's role is config/rbac's least-privilege role and is not extended by values" -}}
{{- end -}}
{{- if and .Values.logEncoding (ne .Values.logEncoding "json") -}}
{{- fail "logEncoding: dovetail logs JSON only" -}}
{{- end -}}
{{- if and .Values.serviceMonitor.enabled (not (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor")) -}}
{{- fail "serviceMonitor.enabled: the cluster has no monitoring.coreos.com/v1 ServiceMonitor API (install the Prometheus Operator's CRDs first, or pass --api-versions monitoring.coreos.com/v1/ServiceMonitor to helm template)" -}}
{{- end -}}
{{- end -}}
