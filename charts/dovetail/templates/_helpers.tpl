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
{{- if eq (toString $img.repository) "public.ecr.aws/karpenter/controller" -}}
{{- /* The peer's own image, from a values file written for the peer: dovetail's replaces it. */ -}}
{{- $img = dict "repository" "ghcr.io/dovetail-sh/dovetail" -}}
{{- end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* FEATURE_GATES from settings.featureGates: reservedCapacity -> ReservedCapacity.
A gate dovetail does not implement fails rendering when true; the list is
pkg/operator's Gates with RefuseOn (charts' TestChartValuesReachTheController
fails when the two disagree). */}}
{{- define "dovetail.featureGates" -}}
{{- $known := list "reservedCapacity" "spotToSpotConsolidation" "nodeRepair" "nodeOverlay" "staticCapacity" "capacityBuffer" "terminateFirstDrift" "terminateFirstRepair" "podDeletionCostManagement" "schedulerHandoff" -}}
{{- $refusedOn := list -}}
{{- include "dovetail.gates" (list "settings.featureGates" .Values.settings.featureGates $known $refusedOn) -}}
{{- end -}}

{{/* AWS_FEATURE_GATES from settings.awsFeatureGates (null is false, as in the
peer's chart); only rebootForRepair is implemented. */}}
{{- define "dovetail.awsFeatureGates" -}}
{{- $known := list "nodeClassCEL" "draNVIDIAGPU" "draEFA" "rebootForRepair" -}}
{{- $refusedOn := list "nodeClassCEL" "draNVIDIAGPU" "draEFA" -}}
{{- include "dovetail.gates" (list "settings.awsFeatureGates" .Values.settings.awsFeatureGates $known $refusedOn) -}}
{{- end -}}

{{/* dovetail.gates: (list path gates known refusedOn) -> "Name=bool,...",
failing on an unknown gate, a value not true/false/null, and a refused true.
Gate names are upper-cased in their first letter, with the peer's acronyms
(nodeClassCEL -> NodeClassCEL, draNVIDIAGPU -> DRANVIDIAGPU, draEFA -> DRAEFA). */}}
{{- define "dovetail.gates" -}}
{{- $path := index . 0 -}}{{- $gates := index . 1 -}}{{- $known := index . 2 -}}{{- $refusedOn := index . 3 -}}
{{- range $k, $v := $gates -}}
{{- if not (has $k $known) -}}
{{- fail (printf "%s.%s: not a feature gate dovetail knows (known: %s)" $path $k (join ", " $known)) -}}
{{- end -}}
{{- end -}}
{{- $out := list -}}
{{- range $k := $known -}}
{{- $v := index (default dict $gates) $k -}}
{{- if kindIs "invalid" $v -}}{{- $v = false -}}{{- end -}}
{{- if not (kindIs "bool" $v) -}}
{{- fail (printf "%s.%s: %v is not true or false" $path $k $v) -}}
{{- end -}}
{{- if and $v (has $k $refusedOn) -}}
{{- fail (printf "%s.%s: true is not implemented by dovetail (docs/controller.md, Feature gates); set it to false" $path $k) -}}
{{- end -}}
{{- $name := printf "%s%s" (upper (substr 0 1 $k)) (substr 1 (len $k) $k) -}}
{{- if hasPrefix "dra" $k -}}{{- $name = upper $k -}}{{- end -}}
{{- $out = append $out (printf "%s=%t" $name $v) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}
