{{/* The full name of every object. */}}
{{- define "dovetail.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "dovetail.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dovetail.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dovetail.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "dovetail.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "dovetail.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "dovetail.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "dovetail.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "dovetail.leaseName" -}}
{{- default (printf "%s-leader-election" (include "dovetail.fullname" .)) .Values.leaderElection.name -}}
{{- end -}}

{{- define "dovetail.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace -}}
{{- end -}}

{{- define "dovetail.image" -}}
{{- $img := .Values.controller.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* FEATURE_GATES from settings.featureGates: reservedCapacity -> ReservedCapacity. */}}
{{- define "dovetail.featureGates" -}}
{{- $known := list "reservedCapacity" "spotToSpotConsolidation" "nodeRepair" "nodeOverlay" "staticCapacity" "capacityBuffer" "schedulerHandoff" -}}
{{- $out := list -}}
{{- range $k, $v := .Values.settings.featureGates -}}
{{- if not (has $k $known) -}}
{{- fail (printf "settings.featureGates.%s: not a feature gate dovetail knows (known: %s)" $k (join ", " $known)) -}}
{{- end -}}
{{- if not (kindIs "bool" $v) -}}
{{- fail (printf "settings.featureGates.%s: %v is not true or false" $k $v) -}}
{{- end -}}
{{- $out = append $out (printf "%s%s=%t" (upper (substr 0 1 $k)) (substr 1 (len $k) $k) $v) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}
