// Unit tests of pod identities (policy/identity.hpp): the labels kept and dropped, the
// namespace's labels, and the canonical key two nodes must agree on.
#include <gtest/gtest.h>

#include "policy/identity.hpp"
#include "policy/names.hpp"

namespace {

using namespace vxfed::policy;

Pod pod(Labels labels, std::string cluster = "a", std::string ns = "prod") {
  return Pod{std::move(cluster), std::move(ns), "web-0", std::move(labels), {}};
}

const Namespace kProd{"a", "prod", {{"team", "blue"}}, {}};

TEST(Identity, DropsOnlyTheVolatileLabels) {
  const Identity id = identity_of(pod({{"app", "web"},
                                       {"pod-template-hash", "7d4b9c8f6"},
                                       {"controller-revision-hash", "web-5c7f"},
                                       {"pod-template-generation", "3"},
                                       {"controller-uid", "0a0b"},
                                       {"batch.kubernetes.io/controller-uid", "0a0b"},
                                       {"statefulset.kubernetes.io/pod-name", "web-0"},
                                       {"apps.kubernetes.io/pod-index", "0"},
                                       {"job-name", "backup"}}),
                                  &kProd);
  EXPECT_EQ(id.pod_labels, (Labels{{"app", "web"},
                                   {"statefulset.kubernetes.io/pod-name", "web-0"},
                                   {"apps.kubernetes.io/pod-index", "0"},
                                   {"job-name", "backup"}}));
  for (auto key : kVolatileLabelKeys) {
    EXPECT_TRUE(is_volatile_label(key)) << key;
    EXPECT_EQ(check_label_key(key), "") << "the list holds valid label keys only: " << key;
  }
  EXPECT_FALSE(is_volatile_label("app"));
}

TEST(Identity, CarriesTheNamespaceAndItsLabels) {
  const Identity id = identity_of(pod({{"app", "web"}}), &kProd);
  EXPECT_EQ(id.cluster, "a");
  EXPECT_EQ(id.namespace_name, "prod");
  EXPECT_EQ(id.namespace_labels, (Labels{{"kubernetes.io/metadata.name", "prod"}, {"team", "blue"}}))
      << "the API server's namespace name label is added when the object lacks it";
  const Identity unknown_ns = identity_of(pod({{"app", "web"}}), nullptr);
  EXPECT_EQ(unknown_ns.namespace_labels, (Labels{{"kubernetes.io/metadata.name", "prod"}}));
  EXPECT_FALSE(id.unlabelled);
}

TEST(Identity, CanonicalKeyIsExactAndSorted) {
  const Identity id = identity_of(pod({{"zone", "z1"}, {"app", "web"}, {"pod-template-hash", "x"}}), &kProd);
  EXPECT_EQ(canonical_key(id),
            "vxfed-identity/1\n"
            "cluster=a\n"
            "namespace=prod\n"
            "namespace-label:kubernetes.io/metadata.name=prod\n"
            "namespace-label:team=blue\n"
            "pod-label:app=web\n"
            "pod-label:zone=z1\n");
}

TEST(Identity, KeysAgreeAndDifferWhereTheyShould) {
  const auto key = [](Labels labels, std::string cluster = "a", const Namespace* ns = &kProd) {
    return canonical_key(identity_of(pod(std::move(labels), std::move(cluster)), ns));
  };
  // Two pods of two rollouts of one Deployment: one identity.
  EXPECT_EQ(key({{"app", "web"}, {"pod-template-hash", "1111"}}), key({{"app", "web"}, {"pod-template-hash", "2222"}}));
  EXPECT_NE(key({{"app", "web"}}), key({{"app", "db"}}));
  EXPECT_NE(key({{"app", "web"}}), key({{"app", "web"}}, "b")) << "the cluster is part of the identity";
  EXPECT_NE(key({{"app", "web"}}), key({{"app", "web"}}, "a", nullptr)) << "namespace labels are part of it";
  // The same label on the pod and on the namespace are different identities.
  const Namespace bare{"a", "prod", {}, {}};
  EXPECT_NE(key({{"team", "blue"}}, "a", &bare), key({}, "a", &kProd));
  EXPECT_NE(key({{"app", "web"}}), key({{"app", "web"}, {"extra", ""}})) << "an empty value is still a label";
}

TEST(Identity, UnlabelledIsOneReservedKey) {
  const Identity a = Identity::make_unlabelled("a", "prod");
  const Identity b = Identity::make_unlabelled();
  EXPECT_TRUE(a.unlabelled);
  EXPECT_EQ(canonical_key(a), "vxfed-identity/1\nreserved=unlabelled\n");
  EXPECT_EQ(canonical_key(a), canonical_key(b));
  EXPECT_NE(canonical_key(a), canonical_key(identity_of(pod({}), nullptr)));
}

}  // namespace
