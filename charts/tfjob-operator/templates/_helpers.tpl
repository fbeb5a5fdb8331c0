{{/*
Names and labels shared by the templates.
*/}}

{{/* The app's name: app.kubernetes.io/name, the selector of the Deployment and the Service. */}}
{{- define "tfjob-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: the release's when it contains the app's name (tfjob-operator), else
<release>-<name>. */}}
{{- define "tfjob-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "tfjob-operator.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels Helm charts put on every object (tests/offline/chart.rs ignores exactly these
when it compares the chart with config/). */}}
{{- define "tfjob-operator.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* What selects the operator's pods (as config/manager: a Deployment's selector cannot change). */}}
{{- define "tfjob-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tfjob-operator.name" . }}
{{- end }}

{{/* Every object's labels. */}}
{{- define "tfjob-operator.labels" -}}
{{ include "tfjob-operator.selectorLabels" . }}
{{ include "tfjob-operator.helmLabels" . }}
{{- end }}

{{- define "tfjob-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tfjob-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the name of an existing ServiceAccount, when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The operator's rules on TFJobs and their children, in a ClusterRole or in a Role per
watched namespace (docs/rbac.md: every verb is one the code calls). */}}
{{- define "tfjob-operator.rules" -}}
# Watch TFJobs; delete one when its ttlSecondsAfterFinished expires.
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs"]
  verbs: ["get", "list", "watch", "delete"]
# Status is written through the status subresource only (PUT).
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs/status"]
  verbs: ["update"]
# Children carry blockOwnerDeletion: true in their owner reference, which the
# OwnerReferencesPermissionEnforcement admission plugin allows only to who may update the
# owner's finalizers. The operator never writes finalizers.
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs/finalizers"]
  verbs: ["update"]
# One pod and one headless service per replica.
- apiGroups: [""]
  resources: ["pods", "services"]
  verbs: ["get", "list", "watch", "create", "delete"]
# Events about TFJobs (repeated events are patched into a series).
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
# Gang scheduling: one PodGroup per job, of Volcano or of scheduler-plugins.
- apiGroups: ["scheduling.x-k8s.io", "scheduling.volcano.sh"]
  resources: ["podgroups"]
  verbs: ["list", "watch", "create", "patch", "delete"]
{{- end }}

{{/* Gang scheduling reads the cluster's PriorityClasses (cluster-scoped: a ClusterRole even
when namespaces are listed). */}}
{{- define "tfjob-operator.priorityClassRules" -}}
# Gang scheduling: a PodGroup's minResources counts higher-priority replicas first (their
# templates' PriorityClass values, read from a watch).
- apiGroups: ["scheduling.k8s.io"]
  resources: ["priorityclasses"]
  verbs: ["list", "watch"]
{{- end }}

{{/* The Kueue mode's rules (kueue.enabled; config/kueue/role.yaml, docs/kueue.md): those on
namespaced objects, in the ClusterRole or in each watched namespace's Role... */}}
{{- define "tfjob-operator.kueueRules" -}}
# One Workload per queued TFJob: watched; created; its spec patched when the job changes
# while it waits (PodSets, queue, priority); its finalizer patched away; deleted when it no
# longer describes the job; read again when a write on the watched version got 409 Conflict.
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# PodsReady, Finished, and the quota given back after an eviction.
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads/status"]
  verbs: ["patch"]
# Suspending and resuming a queued job: `runPolicy.suspend` and the templates, read as
# stored and patched (with the resourceVersion read).
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs"]
  verbs: ["get", "patch"]
{{- end }}

{{/* ...and those on cluster-scoped objects, always in a ClusterRole. */}}
{{- define "tfjob-operator.kueueClusterRules" -}}
# Admission merges the admitted flavors' node labels and tolerations into the pod templates;
# a Workload's priority comes from a WorkloadPriorityClass or a PriorityClass (the default
# one is found by listing).
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["resourceflavors", "workloadpriorityclasses"]
  verbs: ["get"]
- apiGroups: ["scheduling.k8s.io"]
  resources: ["priorityclasses"]
  verbs: ["get", "list"]
{{- end }}
