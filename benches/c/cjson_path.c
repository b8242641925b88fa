/* The C baseline of BENCHMARKS.md: xiaozhi-esp32's McpServer path for the valid set_volume call,
 * with cJSON (libcjson-dev), fed the very bytes of the `call_set_volume` scenario.
 *
 * Per message, as xiaozhi's McpServer::ParseMessage / DoToolCall / ReplyResult do: cJSON_Parse
 * the line; check "jsonrpc" is "2.0"; read "method", "id", "params"; for tools/call read
 * "name" and "arguments", find the tool by name in a table (strcmp, the tool registered last, as
 * in the mcu-mcp scenario), read the integer "volume" and check its range (xiaozhi's
 * PropertyList does the range check), write the simulated codec register and read it back;
 * then build the same answer with cJSON objects (content: one text, "true" with the evidence
 * sentence; structuredContent, isError, evidence) and print it unformatted into a preallocated buffer
 * (cJSON_PrintPreallocated); cJSON_Delete both trees. Unlike mcu-mcp it does not check
 * duplicate or unknown members, and keeps no retransmission cache.
 *
 *   cc -O2 -o cjson_path cjson_path.c -lcjson
 *   ./cjson_path N          # N steps over the 8-message cycle; prints the bytes written
 *   valgrind --tool=callgrind --toggle-collect=step ./cjson_path 1000
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CYCLE 8

static char messages[CYCLE][256];
static char out[9 * 1024];

struct codec {
    int reg;
};

static struct codec codec;

struct tool {
    const char *name;
    int (*call)(const cJSON *arguments, cJSON *result);
};

static int set_volume(const cJSON *arguments, cJSON *result) {
    const cJSON *volume = cJSON_GetObjectItemCaseSensitive(arguments, "volume");
    if (!cJSON_IsNumber(volume) || volume->valuedouble != (double)volume->valueint ||
        volume->valueint < 0 || volume->valueint > 100) {
        return -1;
    }
    int commanded = volume->valueint;
    codec.reg = commanded;     /* write the register */
    int observed = codec.reg;  /* read it back */
    char line[96];
    snprintf(line, sizeof line, "true \u2014 read back: %d (commanded %d)", observed, commanded);
    cJSON *content = cJSON_AddArrayToObject(result, "content");
    cJSON *text = cJSON_CreateObject();
    cJSON_AddStringToObject(text, "type", "text");
    cJSON_AddStringToObject(text, "text", line);
    cJSON_AddItemToArray(content, text);
    cJSON *structured = cJSON_AddObjectToObject(result, "structuredContent");
    cJSON_AddBoolToObject(structured, "value", 1);
    cJSON_AddBoolToObject(result, "isError", 0);
    cJSON *evidence = cJSON_AddObjectToObject(result, "evidence");
    cJSON_AddStringToObject(evidence, "level", "read_back");
    cJSON_AddNumberToObject(evidence, "commanded", commanded);
    cJSON_AddNumberToObject(evidence, "observed", observed);
    return 0;
}

static int other(const cJSON *arguments, cJSON *result) {
    (void)arguments;
    (void)result;
    return -1;
}

/* The device-sim tool set: set_volume registered last. */
static const struct tool tools[] = {
    {"self.get_device_status", other},      {"self.screen.set_theme", other},
    {"self.screen.show_text", other},       {"self.relay.set", other},
    {"self.motor.move_to", other},          {"self.reboot", other},
    {"self.get_task_status", other},        {"self.audio_speaker.set_volume", set_volume},
};

static size_t reply(cJSON *id, cJSON *result) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "jsonrpc", "2.0");
    cJSON_AddItemToObject(root, "id", cJSON_Duplicate(id, 0));
    cJSON_AddItemToObject(root, "result", result);
    size_t len = 0;
    if (cJSON_PrintPreallocated(root, out, sizeof out, 0)) {
        len = strlen(out);
    }
    cJSON_Delete(root);
    return len;
}

static size_t error(cJSON *id, int code, const char *message) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "jsonrpc", "2.0");
    cJSON_AddItemToObject(root, "id", id ? cJSON_Duplicate(id, 0) : cJSON_CreateNull());
    cJSON *e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    size_t len = 0;
    if (cJSON_PrintPreallocated(root, out, sizeof out, 0)) {
        len = strlen(out);
    }
    cJSON_Delete(root);
    return len;
}

/* One message in, one answer out: what the callgrind count covers. */
__attribute__((noinline)) size_t step(const char *message) {
    cJSON *json = cJSON_Parse(message);
    if (!json) {
        return error(NULL, -32700, "Parse error");
    }
    size_t len = 0;
    cJSON *version = cJSON_GetObjectItemCaseSensitive(json, "jsonrpc");
    cJSON *method = cJSON_GetObjectItemCaseSensitive(json, "method");
    cJSON *id = cJSON_GetObjectItemCaseSensitive(json, "id");
    cJSON *params = cJSON_GetObjectItemCaseSensitive(json, "params");
    if (!cJSON_IsString(version) || strcmp(version->valuestring, "2.0") != 0 ||
        !cJSON_IsString(method) || !id) {
        len = error(id, -32600, "Invalid Request");
    } else if (strcmp(method->valuestring, "tools/call") == 0) {
        cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
        cJSON *arguments = cJSON_GetObjectItemCaseSensitive(params, "arguments");
        const struct tool *tool = NULL;
        for (size_t i = 0; cJSON_IsString(name) && i < sizeof tools / sizeof tools[0]; i++) {
            if (strcmp(tools[i].name, name->valuestring) == 0) {
                tool = &tools[i];
                break;
            }
        }
        if (!tool) {
            len = error(id, -32602, "Unknown tool");
        } else {
            cJSON *result = cJSON_CreateObject();
            if (tool->call(arguments, result) == 0) {
                len = reply(id, result);
            } else {
                cJSON_Delete(result);
                len = error(id, -32602, "Invalid arguments");
            }
        }
    } else {
        len = error(id, -32601, "Method not found");
    }
    cJSON_Delete(json);
    return len;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    for (int k = 0; k < CYCLE; k++) {
        snprintf(messages[k], sizeof messages[k],
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"self.audio_speaker.set_volume\",\"arguments\":{\"volume\":%d}}}",
                 101 + k, 40 + k);
    }
    /* Check the answer once, outside the counted steps. */
    size_t len = step(messages[0]);
    if (len == 0 || strstr(out, "\"commanded\":40,\"observed\":40") == NULL ||
        strstr(out, "\"id\":101") == NULL) {
        fprintf(stderr, "wrong answer: %.*s\n", (int)len, out);
        return 1;
    }
    fprintf(stderr, "%s\n", out);
    size_t bytes = 0;
    for (long i = 0; i < n; i++) {
        bytes += step(messages[i % CYCLE]);
    }
    fprintf(stderr, "call_set_volume/cjson: %ld steps, %zu response bytes\n", n, bytes);
    return 0;
}
