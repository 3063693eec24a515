#ifndef MQTTCHAT_CMOSQUITTO_SHIM_H
#define MQTTCHAT_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
/* MQTT_PROP_* property identifiers and MQTT_SUB_OPT_* subscribe options for the MQTT 5 API. */
#include <mqtt_protocol.h>
#endif
