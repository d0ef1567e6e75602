// The Python client's suite (python/tests, unittest) run from ctest with
// Debian's python3 and its torch, numpy, gRPC, protobuf and PyYAML, one
// test case per module so that ctest runs them side by side and names the
// one that fails. What they hold: the codec writes the C++ codec's bytes
// and refuses what it refuses, word for word (tests/data/codec_vectors.json);
// the partition, batch order and synthetic data are the C++ ones
// (tests/data/shard_vectors.json); the gRPC modules generated into
// python/shefl_client/_proto register with a real coordinator under mutual TLS and a
// per-daemon token; mixed runs of C++ daemons and Python clients started
// by `shefl run --python-clients` finish with equal books and the C++-only
// run's models; kill -9 of a Python client is survived; `pip install
// ./python` works offline; `mypy --strict` finds no type error; secure
// aggregation's primitives and party give the C++ library's bytes, and a
// Python client takes part in secure rounds beside C++ daemons with the
// C++-only run's models and books.
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// Runs one python/tests module; every name in `expected` must have run.
void RunPythonTests(const std::string& module, const std::vector<std::string>& expected) {
  const std::string root = SHEFL_SOURCE_DIR;
  auto r = testing::RunProcess(
      {"/usr/bin/env", "PYTHONPATH=" + root + "/python:" + root + "/python/tests",
       "SHEFL_BIN_DIR=" + testing::BinDir(), "PYTHONDONTWRITEBYTECODE=1", "/usr/bin/python3",
       "-m", "unittest", "-v", module},
      600);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  for (const std::string& name : expected) CHECK_THAT(r.output, Catch::Contains(name + " ("));
  CHECK_THAT(r.output, Catch::Contains("\nOK"));
}

TEST_CASE("python: the codec writes and refuses what the C++ codec does") {
  RunPythonTests("test_codec", {"test_refusals_say_what_the_cpp_decoder_says"});
}

TEST_CASE("python: the results API reads a run folder") {
  RunPythonTests("test_results", {"test_a_finished_run_reads_whole"});
}

TEST_CASE("python: registration, layout and refusals against a real coordinator") {
  RunPythonTests("test_wire", {"test_a_registration_gets_a_session_clients_and_the_config",
                               "test_the_layout_comes_when_asked_for",
                               "test_a_module_of_another_layout_is_refused_naming_the_tensor",
                               "test_a_python_client_with_a_wrong_token_is_refused",
                               "test_clients_flag_reads_the_launchers_step_form"});
}

TEST_CASE("python: the partition, batch order and synthetic data are the C++ ones") {
  RunPythonTests("test_shards", {"test_streams", "test_partitions", "test_synthetic"});
}

TEST_CASE("python: top-k, error feedback and the flat layout") {
  RunPythonTests("test_compress", {"test_ties_at_the_threshold_go_to_the_lower_indices",
                                   "test_files_are_the_cpp_format_and_come_back"});
}

TEST_CASE("python: a mixed run equals a C++-only run, and faults are survived") {
  RunPythonTests("test_mixed_run", {"test_books_agree_byte_for_byte",
                                    "test_models_equal_a_cpp_only_run",
                                    "test_kill_9_mid_run_is_survived_and_residuals_come_back"});
}

TEST_CASE("python: a bad upload is refused as a C++ daemon's is") {
  RunPythonTests("test_refusals", {"test_a_python_client_is_refused_as_a_cpp_daemon_is"});
}

TEST_CASE("python: the Fashion-MNIST example joins shefl run") {
  RunPythonTests("test_example", {"test_the_example_joins_and_reaches_the_cpp_models"});
}

TEST_CASE("python: the package has no import cycle and imports its gRPC modules relatively") {
  RunPythonTests("test_package", {"test_no_import_cycle_between_modules",
                                  "test_nothing_edits_sys_path",
                                  "test_generated_imports_are_made_relative",
                                  "test_models_have_the_cpp_layouts",
                                  "test_auto_resolves_as_the_cpp_daemon_does"});
}

// Secure aggregation in Python (shefl_client.secure, one test module per
// module of it) against the published vectors, the values
// tests/secure_masks_test.cc pins and values common/secure/ computed for
// fixed keys (a box it sealed, shares it split, its masked inputs and
// fixed-point words), then whole sessions of Python parties.
TEST_CASE("python: secure aggregation's primitives give the published vectors") {
  RunPythonTests("test_secure_primitives",
                 {"test_x25519_iterated_1_and_1000_times_gives_rfc7748s_values",
                  "test_hkdf_sha256_gives_rfc5869s_test_cases_1_to_3",
                  "test_aes_256_ctr_gives_nist_sp800_38a_f55",
                  "test_aes_256_gcm_seals_and_opens_gcm_test_case_16"});
}

TEST_CASE("python: the secure session id is the C++ one") {
  RunPythonTests("test_secure_session_id",
                 {"test_the_session_encoding_is_the_cpp_bytes",
                  "test_the_session_id_covers_every_parameter_and_refuses_inconsistent_ones"});
}

TEST_CASE("python: Shamir sharing is the C++ one") {
  RunPythonTests("test_secure_shamir",
                 {"test_cpp_shares_parse_reconstruct_and_serialise_back",
                  "test_every_t_subset_reconstructs_for_n_5_t_3_and_n_10_t_7"});
}

TEST_CASE("python: share boxes are the C++ ones") {
  RunPythonTests("test_secure_share_box",
                 {"test_a_cpp_share_box_opens_and_python_seals_the_same_bytes",
                  "test_a_share_box_is_refused_in_another_session_direction_or_pair_or_changed"});
}

TEST_CASE("python: secure aggregation's masks are the C++ ones") {
  RunPythonTests("test_secure_masks",
                 {"test_session_id_mask_keys_and_streams_are_the_cpp_pinned_values",
                  "test_masked_inputs_are_the_cpp_words_and_unmask_with_a_drop",
                  "test_pairwise_masks_cancel_mod_2_32_for_n_2_3_and_20"});
}

TEST_CASE("python: the secure fixed-point encoding is the C++ one") {
  RunPythonTests("test_secure_fixed_point",
                 {"test_the_fixed_point_encoding_of_a_seed_is_the_cpp_one"});
}

TEST_CASE("python: the secure party acts as the C++ one") {
  RunPythonTests("test_secure_party",
                 {"test_30_percent_dropped_at_any_stage_gives_the_survivors_exact_sum",
                  "test_a_party_refuses_a_request_that_would_reveal_an_input",
                  "test_a_party_refuses_a_minority_t_and_to_mask_with_fewer_than_t_sharers"});
}

// The vote of secure aggregation in the Python party: the own top-k rule,
// the counts' layout, 16-bit words on the wire, and mixed layout + vote
// runs (32- and 16-bit) equal to C++-only ones.
TEST_CASE("python: the secure vote counts as the C++ party does") {
  RunPythonTests("test_secure_vote",
                 {"test_own_top_k_is_the_cpp_rule",
                  "test_each_position_counts_in_its_row_and_column",
                  "test_the_counts_ride_after_the_values",
                  "test_16_bit_values_go_up_in_2_bytes_and_counts_in_4",
                  "test_a_mixed_vote_run_equals_a_cpp_only_run"});
}

// SecAgg+ in the Python party: the C++ graph and v2 session id, boxes to
// neighbours only, and a mixed graph run equal to C++-only graph and
// all-pairs runs.
TEST_CASE("python: the secure party masks along the C++ neighbour graph") {
  RunPythonTests("test_secure_graph",
                 {"test_the_graph_of_a_seed_is_the_cpp_ring",
                  "test_a_graph_session_id_is_the_cpp_v2_bytes",
                  "test_boxes_go_to_neighbours_only_and_a_strangers_box_is_refused",
                  "test_a_mixed_graph_run_equals_cpp_graph_and_all_pairs_runs"});
}

// The support diagnosis in the Python party: its dense sum and union by
// hand, and a mixed diagnosed run logging the C++ run's fits.
TEST_CASE("python: the secure party's support diagnosis is the C++ one") {
  RunPythonTests("test_secure_diagnosis",
                 {"test_the_dense_sum_and_the_union_by_hand",
                  "test_a_mixed_diagnosed_run_logs_the_cpp_fits_and_changes_no_model"});
}

// A Python client as a secure-aggregation party
// (shefl_client.secure.secure_sessions):
// mixed runs under common_support (the Python party hosting three clients,
// then one) equal a C++-only run's models bit for bit and the coordinator's
// books byte for byte, clear_support gives the same models; the support's
// wire form, each client's words and residual, and the party's stages
// checked without a coordinator.
TEST_CASE("python: secure aggregation in a mixed run equals a C++-only run") {
  RunPythonTests("test_secure_run",
                 {"test_every_session_finishes_with_the_python_party_in_it",
                  "test_models_equal_a_cpp_only_run",
                  "test_clear_support_gives_the_common_support_models",
                  "test_books_agree_byte_for_byte",
                  "test_index_sets_round_trip_in_every_format",
                  "test_index_sets_are_refused_as_the_cpp_refuses_them",
                  "test_words_and_residuals_are_a_plain_reading_of_the_cpp",
                  "test_the_packing_and_order_change_no_word",
                  "test_inputs_that_do_not_fit_are_refused",
                  "test_clear_support_sends_the_words_once_every_client_is_in",
                  "test_a_refused_input_puts_the_residual_before_it_back",
                  "test_masked_parties_send_each_stage_and_their_masks_cancel"});
}

// (shefl_client.secure.party_noise): the noise key, stream and draws are
// the C++ party's bit for bit, the noise is keyed and refused as the C++
// refuses it, the L2 clip holds, and a distributed-DP run with the Python
// party in it equals the C++-only run's models bit for bit.
TEST_CASE("python: distributed DP's noise and clip are the C++ party's") {
  RunPythonTests("test_party_noise",
                 {"test_the_stream_and_draws_are_the_cpp_partys",
                  "test_poisson_draws_have_poissons_mean_and_variance",
                  "test_log_pmf_keeps_its_precision_near_a_large_mean",
                  "test_noise_is_keyed_and_only_on_the_values",
                  "test_t_parties_sum_to_the_target_variance",
                  "test_bad_variances_are_refused",
                  "test_the_partys_floor_is_the_cpp_partys",
                  "test_words_stay_within_the_l2_clip_and_the_residual_keeps_the_rest",
                  "test_a_mixed_run_equals_the_cpp_only_run_and_the_noise_moved_it"});
}

TEST_CASE("python: pip install ./python works offline") {
  RunPythonTests("test_install", {"test_pip_install_offline_into_a_venv"});
}

// mypy --strict over the package, as python/pyproject.toml's [tool.mypy]
// sets it up (Debian's mypy and python3-typeshed). A call with a wrong
// argument type is checked first, so the test knows the check can fail.
TEST_CASE("python: mypy --strict finds no type error in the package") {
  const std::string python = std::string(SHEFL_SOURCE_DIR) + "/python";
  const std::string cache = std::string(SHEFL_BINARY_DIR) + "/mypy-cache";
  auto mypy = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/env", "--chdir=" + python,
                                     "PYTHONDONTWRITEBYTECODE=1", "/usr/bin/python3", "-m",
                                     "mypy", "--strict", "--cache-dir", cache};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProcess(argv, 600);
  };
  auto version = mypy({"--version"});
  INFO(version.output);
  INFO("mypy is missing: apt install mypy python3-typeshed (scripts/setup.sh installs both)");
  REQUIRE(version.exit_code == 0);

  const std::string probe = std::string(SHEFL_BINARY_DIR) + "/mypy_probe.py";
  std::ofstream(probe) << "from shefl_client import Options\n"
                          "Options(coordinator=1, clients='0')\n";
  auto wrong = mypy({probe});
  INFO(wrong.output);
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.output, Catch::Contains("Argument \"coordinator\" to \"Options\""));

  auto r = mypy({});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("Success: no issues found"));
}

}  // namespace
}  // namespace shefl
