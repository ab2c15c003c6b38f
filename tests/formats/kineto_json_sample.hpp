// The Kineto JSON text the splitter's tests read: nested objects and arrays
// in args, and strings holding every character the splitter acts on
// ({ } [ ] " \ ,) escaped or not.
#pragma once

#include <string>

inline const std::string kineto_json_sample =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"}]\"}],\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"name\": \"a\\\"}]\\\\\", \"ts\": 1.5, \"dur\": 2,\n"
    "   \"args\": {\"Input Dims\": [[64, 128], []], \"nested\": {\"deeper\": {\"x\": \"{[\"}}}},\n"
    "  {\"ph\": \"i\", \"name\": \"b\", \"ts\": -12345.678e-3}\n"
    " ],\n"
    " \"baseTimeNanoseconds\": 1700000000000000000\n"
    "}\n";
