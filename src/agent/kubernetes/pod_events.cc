// SPDX-License-Identifier: Apache-2.0
#include "agent/kubernetes/pod_events.h"

#include <nlohmann/json.hpp>

namespace warpscope::agent::kubernetes {
namespace {

using nlohmann::json;

std::string StringAt(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

const json* ObjectAt(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return nullptr;
  return &*it;
}

void AddContainers(const json& status, const char* key, PodRecord& pod) {
  auto it = status.find(key);
  if (it == status.end() || !it->is_array()) return;
  for (const json& c : *it) {
    const std::string id = StringAt(c, "containerID");
    const std::string name = StringAt(c, "name");
    if (id.empty() || name.empty()) continue;  // not started yet
    pod.containers.emplace_back(std::string(StripRuntimePrefix(id)), name);
  }
}

base::Result<PodRecord> ParsePod(const json& obj) {
  const json* meta = ObjectAt(obj, "metadata");
  if (meta == nullptr) {
    return base::Error(base::InvalidArgument("pod without metadata"));
  }
  PodRecord pod;
  pod.uid = StringAt(*meta, "uid");
  pod.pod_namespace = StringAt(*meta, "namespace");
  pod.name = StringAt(*meta, "name");
  if (pod.uid.empty()) {
    return base::Error(
        base::InvalidArgument("pod '{}/{}' without metadata.uid", pod.pod_namespace, pod.name));
  }
  if (const json* status = ObjectAt(obj, "status")) {
    AddContainers(*status, "containerStatuses", pod);
    AddContainers(*status, "initContainerStatuses", pod);
  }
  return pod;
}

std::string ResourceVersionOf(const json& obj) {
  const json* meta = ObjectAt(obj, "metadata");
  return meta != nullptr ? StringAt(*meta, "resourceVersion") : std::string();
}

}  // namespace

std::string_view StripRuntimePrefix(std::string_view container_id) {
  const size_t sep = container_id.find("://");
  return sep == std::string_view::npos ? container_id : container_id.substr(sep + 3);
}

base::Result<PodList> ParsePodList(std::string_view body) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return base::Error(base::InvalidArgument("pod list: not a JSON object"));
  }
  auto items = doc.find("items");
  if (StringAt(doc, "kind") != "PodList" && (items == doc.end() || !items->is_array())) {
    return base::Error(
        base::InvalidArgument("pod list: kind '{}', expected PodList", StringAt(doc, "kind")));
  }
  PodList list;
  list.resource_version = ResourceVersionOf(doc);
  if (items != doc.end() && items->is_array()) {
    for (const json& item : *items) {
      auto pod = ParsePod(item);
      if (!pod) return base::Error(pod.error().WithContext("pod list"));
      list.pods.push_back(std::move(*pod));
    }
  }
  return list;
}

base::Result<WatchEvent> ParseWatchEvent(std::string_view line) {
  json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return base::Error(base::InvalidArgument("watch event: not a JSON object"));
  }
  const std::string type = StringAt(doc, "type");
  const json* object = ObjectAt(doc, "object");
  if (object == nullptr) {
    return base::Error(base::InvalidArgument("watch event '{}' without an object", type));
  }
  WatchEvent event;
  if (type == "ERROR") {
    event.type = WatchEvent::Type::kError;
    auto code = object->find("code");
    if (code != object->end() && code->is_number_integer()) event.error_code = code->get<int>();
    event.error_message = StringAt(*object, "message");
    return event;
  }
  if (type == "ADDED") {
    event.type = WatchEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    event.type = WatchEvent::Type::kModified;
  } else if (type == "DELETED") {
    event.type = WatchEvent::Type::kDeleted;
  } else if (type == "BOOKMARK") {
    event.type = WatchEvent::Type::kBookmark;
  } else {
    return base::Error(base::InvalidArgument("watch event: unknown type '{}'", type));
  }
  event.resource_version = ResourceVersionOf(*object);
  if (event.type == WatchEvent::Type::kBookmark) return event;
  auto pod = ParsePod(*object);
  if (!pod) return base::Error(pod.error().WithContext("watch event " + type));
  event.pod = std::move(*pod);
  return event;
}

}  // namespace warpscope::agent::kubernetes
