// SPDX-License-Identifier: Apache-2.0
// The JSON Schemas under schemas/, compiled into the binary (see schemas/CMakeLists.txt).
#pragma once

namespace dsp::schemas {
extern const char* const k_ds_config_schema_json;
extern const char* const k_validate_report_schema_json;
extern const char* const k_groups_report_schema_json;
extern const char* const k_cluster_schema_json;
extern const char* const k_simulate_report_schema_json;
extern const char* const k_tune_report_schema_json;
extern const char* const k_graph_schema_json;
extern const char* const k_plan_schema_json;
extern const char* const k_plan_check_report_schema_json;
extern const char* const k_run_report_schema_json;
extern const char* const k_bench_report_schema_json;
extern const char* const k_compare_report_schema_json;
}  // namespace dsp::schemas
